"""oarkit.det: object detection (PaddleDetection); its models, data and predictor are built in their own issue."""
