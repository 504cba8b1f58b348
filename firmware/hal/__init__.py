# Hardware seams: uiflow (CoreS3 on UIFlow2), generic (upstream ESP32_GENERIC_S3), fake (tests, simulator).
