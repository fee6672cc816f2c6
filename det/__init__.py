"""oarkit.det: object detection (PaddleDetection); its models, data and predictor are built in their own issue."""

from oarkit.det import models  # noqa: F401  (registers the det/ models)
