"""SLANet's structure vocabulary: PaddleOCR's ``table_structure_dict_ch.txt`` as the model's ONNX metadata lists it
(``character``), with ``<td></td>`` (an empty-attribute cell in one token) and the decoder's ``sos`` / ``eos``.

Index 0 is ``sos`` (the first step's input), the last is ``eos``. A cell is either ``<td></td>`` or the sequence
``<td``, its attributes (`` colspan="n"``, `` rowspan="n"``), ``>``, ``</td>``; the location regressor's output at
``<td></td>`` and ``<td`` steps is that cell's box.
"""

from __future__ import annotations

SOS, END = "sos", "eos"
#: the dictionary lines in order (the ONNX metadata's ``character``)
DICTIONARY: tuple[str, ...] = (
    "<thead>", "</thead>", "<tbody>", "</tbody>", "<tr>", "</tr>", "<td", ">", "</td>",
    *(f' colspan="{n}"' for n in range(2, 21)), *(f' rowspan="{n}"' for n in range(2, 21)), "<td></td>",
)
TOKENS: tuple[str, ...] = (SOS, *DICTIONARY, END)
NUM_TOKENS = len(TOKENS)
EOS = NUM_TOKENS - 1
#: tokens that open a cell, whose step predicts the cell's box
CELL_TOKENS = frozenset({"<td></td>", "<td"})
