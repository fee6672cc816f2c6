"""oarkit.ocr: text detection and recognition (PaddleOCR); its models and pipeline are built in their own issue."""
