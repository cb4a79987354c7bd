"""The Scrapy process of `npm run bench -- --scrapy` (started by bench/scrapy.ts,
never by hand): a spider following every same-host link of the test web's
sites, in a process of its own so that its CPU and RSS are its alone.

It talks to its parent over stdin and stdout, one JSON object a line: it reads
its config, loads Scrapy and builds the crawler, says {"type": "ready"}, crawls
once it reads {"type": "go"}, and ends with {"type": "done", ...} holding its
own CPU from "go" on, its peak RSS and Scrapy's counters. It keeps nothing:
no items, no pipelines, no HTTP cache, no job directory.
"""

import json
import resource
import sys


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def cpu_ms():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime) * 1000


def status_mb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024)
    return 0


CONFIG = json.loads(sys.stdin.readline())

from twisted.internet import defer  # noqa: E402
from twisted.internet.error import DNSLookupError  # noqa: E402
from twisted.internet.interfaces import IResolverSimple  # noqa: E402
from zope.interface import implementer  # noqa: E402

import scrapy  # noqa: E402
from scrapy.crawler import CrawlerProcess  # noqa: E402
from scrapy.linkextractors import LinkExtractor  # noqa: E402
from scrapy.spiders import CrawlSpider, Rule  # noqa: E402


@implementer(IResolverSimple)
class LoopbackResolver:
    """The test hosts resolve to the test web, every other name fails: no
    request can leave the machine (the stand-in for curl's --resolve)."""

    def __init__(self, reactor):
        self.reactor = reactor

    @classmethod
    def from_crawler(cls, crawler, reactor):
        return cls(reactor)

    def install_on_reactor(self):
        self.reactor.installResolver(self)

    def getHostByName(self, name, timeout=()):
        if name.lower() in KNOWN_HOSTS:
            return defer.succeed(CONFIG["address"])
        return defer.fail(DNSLookupError(f"{name} is not a test host"))


KNOWN_HOSTS = {h.lower() for h in CONFIG["hosts"]}


class SiteSpider(CrawlSpider):
    """Every page of every seed's host: links of <a> and <area> elements
    (LinkExtractor's defaults), kept to the seeds' hosts by allowed_domains;
    Scrapy's dupefilter fetches each URL once. Pages are counted, not kept."""

    name = "bench"
    rules = (Rule(LinkExtractor(), callback="count", follow=True),)

    def __init__(self, seeds, hosts, **kw):
        self.start_urls = seeds
        self.allowed_domains = hosts
        self.pages = 0
        super().__init__(**kw)

    def parse_start_url(self, response, **kw):
        return self.count(response)

    def count(self, response):
        self.pages += 1
        return ()


settings = {
    "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": False,
    "ROBOTSTXT_OBEY": CONFIG["respectRobots"],
    "DOWNLOAD_DELAY": CONFIG["delaySecs"],
    "AUTOTHROTTLE_ENABLED": False,
    # No per-host cap below the total, as Crawlee has none: concurrency is the scenario's.
    "CONCURRENT_REQUESTS": CONFIG["concurrency"],
    "CONCURRENT_REQUESTS_PER_DOMAIN": CONFIG["concurrency"],
    "TWISTED_DNS_RESOLVER": "__main__.LoopbackResolver",
    "USER_AGENT": "ScrapyBench (+bench/scrapy-child.py)",
    "RETRY_ENABLED": True,
}
if CONFIG.get("maxPages"):
    settings["CLOSESPIDER_PAGECOUNT"] = CONFIG["maxPages"]

process = CrawlerProcess(settings)
crawler = process.create_crawler(SiteSpider)
process.crawl(crawler, seeds=CONFIG["seeds"], hosts=CONFIG["hosts"])
send({"type": "ready", "scrapy": scrapy.__version__})
ready_rss = status_mb("VmRSS")
go = json.loads(sys.stdin.readline())
assert go["type"] == "go", go
cpu0 = cpu_ms()
process.start()
cpu = cpu_ms() - cpu0
stats = crawler.stats.get_stats()
send(
    {
        "type": "done",
        "pages": crawler.spider.pages if crawler.spider else 0,
        "responses": stats.get("response_received_count", 0),
        "requestErrors": stats.get("downloader/exception_count", 0),
        "finishReason": stats.get("finish_reason"),
        "cpuMs": round(cpu),
        "peakRssMb": status_mb("VmHWM"),
        "readyRssMb": ready_rss,
    }
)
