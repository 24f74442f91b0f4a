-- Whether an organization's uploaded images are read by OCR (issue 37): off until one of
-- its administrators turns it on (`PATCH /v1/organization`, `tessera-admin org set`).
ALTER TABLE organizations ADD COLUMN image_ocr BOOLEAN NOT NULL DEFAULT FALSE;
