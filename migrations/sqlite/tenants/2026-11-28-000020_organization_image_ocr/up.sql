-- Whether an organization's uploaded images are read by OCR. Keep in step with
-- migrations/postgres (same column).
ALTER TABLE organizations ADD COLUMN image_ocr BOOLEAN NOT NULL DEFAULT 0 CHECK (image_ocr IN (0, 1));
