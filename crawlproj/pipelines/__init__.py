"""Item pipelines of the content path, in ITEM_PIPELINES order:

1. content.ContentDedupPipeline  content_hash, simhash, duplicate_of (exact / near)
2. store.PageStorePipeline       body -> page store (S3 or local), content_ref
3. metadata.MetadataPipeline     row completed; the spider may follow the page's links
"""
