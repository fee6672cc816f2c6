"""Data helpers every kit shares: decoding images, taking predictor inputs, list files, sample seeds, batch samplers."""

from oarkit.core.data.images import ImageInput, decode_image, load_image_input, read_image
from oarkit.core.data.lists import resolve_list_file
from oarkit.core.data.samplers import GroupedBatchSampler, ResumableBatchSampler
from oarkit.core.data.seeds import sample_seed

__all__ = ["GroupedBatchSampler", "ImageInput", "ResumableBatchSampler", "decode_image", "load_image_input",
           "read_image", "resolve_list_file", "sample_seed"]
