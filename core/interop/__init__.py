"""oarkit.core.interop: Paddle checkpoints read without Paddle and converted onto oarkit modules.

- :func:`read_pdparams`: a ``.pdparams`` pickle, through an unpickler that admits numpy arrays only;
- :func:`read_inference_model`: ``inference.pdiparams`` with its program and ``.pdiparams.info``;
- :func:`read_paddlenlp_dir`: a PaddleNLP model directory (weights + config);
- :class:`PaddleMapping` / :func:`apply_mapping`: a family's declared renames and layout changes;
- :func:`convert_paddle`: any of the above into a self-describing oarkit model directory.
- :mod:`oarkit.core.interop.pretrained`: Paddle releases behind ``pretrained=True`` (converted once into the
  cache) and local Paddle checkpoints behind ``pretrained="x.pdparams"``.
"""

from oarkit.core.interop.convert import convert_paddle, read_paddle_checkpoint
from oarkit.core.interop.inference_model import InferenceModel, read_inference_model
from oarkit.core.interop.mapping import PaddleMapping, apply_mapping
from oarkit.core.interop.paddlenlp import read_paddlenlp_dir
from oarkit.core.interop.pdparams import read_pdparams

__all__ = [
    "InferenceModel", "PaddleMapping", "apply_mapping", "convert_paddle", "read_inference_model",
    "read_paddle_checkpoint", "read_paddlenlp_dir", "read_pdparams",
]
