"""OCR recipes: PaddleOCR det, rec and cls configs on oarkit."""
