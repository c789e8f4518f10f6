"""WARC output (ISO 28500, WARC/1.1): records, files, storage and CDXJ indexes."""
