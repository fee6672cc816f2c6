"""oarkit.seg: semantic segmentation (PaddleSeg); its models, data and predictor are built in their own issue."""
