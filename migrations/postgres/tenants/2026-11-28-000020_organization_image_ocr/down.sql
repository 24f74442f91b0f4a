ALTER TABLE organizations DROP COLUMN image_ocr;
