"""PP-OCRv4 mobile, PP-OCRv5 mobile, PP-OCRv6 tiny and PP-OCRv6 small side by side: how well each reads rendered
English and Chinese text and how fast its whole pipeline is, eager PyTorch as ``OCR(version=...)`` runs it.

    python bench/ocr_versions.py [--rounds 3] [--threads 2] [--out bench/results/ocr_versions.md]

The set is fixed and seeded, drawn from the corpus below (sentences written for this bench) in the Noto fonts of
``oarkit.ocr.render``:
- 40 English + 40 Chinese lines (``render_line``: heights 32-64, regular and bold, plain, grey, blurred, noisy
  and letter-spaced styles), read by each recognizer alone on the line crop (``recognize``, the pipeline's own
  batching): line CER and exact lines;
- 4 English + 4 Chinese pages of 960x720 with 3-4 left-aligned paragraphs each (a title line in bold, wrapped
  body lines of 20-30 px type, mild noise), read by the whole pipeline: CER of the reading-order text against the
  truth, and the median milliseconds per page over ``--rounds`` rounds (and the seconds each pipeline took to build).

CER ignores whitespace (as PaddleOCR's recognition metric does: Chinese truth has no spaces and the recognizers
differ in where they put them). Every version runs with the same torch thread count, det with the DB settings it
was published with (``db_postprocess``). The versions are timed interleaved: each round visits the pages in turn
and runs every version on each page in a rotating order, so a burst of load on the shared machine falls on all of
them alike; the load average before and after is reported.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import platform
import random
import statistics
import time
from pathlib import Path

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from oarkit.ocr import OCR, character_error_rate, edit_distance  # noqa: E402
from oarkit.ocr.pipeline.glue import recognize  # noqa: E402
from oarkit.ocr.pipeline.ocr import DEFAULT_VERSION, VERSIONS  # noqa: E402
from oarkit.ocr.render import LineStyle, font_for, load_font, render_line  # noqa: E402

BASELINE = "PP-OCRv4"
#: the latency a version may cost for the default, as a multiple of the baseline's ms per page
LATENCY_BUDGET = 1.2

ENGLISH = (
    "The river runs past the old mill and under the stone bridge before it reaches the harbour.",
    "Every morning the market opens at seven, and the first customers arrive with empty baskets.",
    "Please keep your ticket until the end of the journey; inspectors may ask to see it at any time.",
    "The committee will meet again on Thursday to review the budget for the coming year.",
    "Our library lends books, maps and recordings to anyone who lives or works in the district.",
    "Invoice 2024-0317: total amount due 1,280.50 EUR, payable within thirty days of the date shown.",
    "Heavy rain is expected in the north tonight, with strong winds along the coast until Friday.",
    "She wrote the letter twice, crossed out a line, and finally sent it by registered mail.",
    "The new station has six platforms, a waiting room, a small cafe and a bicycle park.",
    "Students should hand in their reports before noon on Monday, printed on both sides of the page.",
    "A good map shows the roads, the rivers and the hills, and leaves out everything else.",
    "Store the bottle in a cool, dry place away from sunlight, and use it within three months.",
    "The museum is open from 10:00 to 18:00 every day except public holidays.",
    "When the lights went out, the engineers switched to the backup generator within a minute.",
    "Order number 58213 was shipped on 12 March and should arrive in four to six working days.",
    "Children under twelve travel free when they are accompanied by an adult with a valid ticket.",
)
CHINESE = (
    "今天早上天气晴朗，我们一起去公园散步，看见很多人在湖边锻炼身体。",
    "本店营业时间为每天上午九点至晚上十点，节假日照常营业，欢迎光临。",
    "请乘客们注意安全，列车即将进站，请站在黄线以外排队等候上车。",
    "图书馆新到了一批科学技术方面的书籍，读者可以凭借阅证免费借阅。",
    "人工智能和深度学习正在改变我们的生活，文字识别就是其中的一个例子。",
    "发票号码二零二四零三一七，合计金额一千二百八十元，请在三十天内付款。",
    "明天北方地区将有大到暴雨，沿海地区有六到七级大风，请注意防范。",
    "他把信写了两遍，划掉了一行字，最后用挂号信寄了出去。",
    "新建的火车站有六个站台，一个候车室，一家小餐厅和一个自行车停车场。",
    "学生们应当在星期一中午以前交上自己的报告，并且要双面打印。",
    "一张好的地图会标出道路、河流和山丘，而把其他的东西都省略掉。",
    "请将本品存放在阴凉干燥处，避免阳光直射，开封后请在三个月内用完。",
    "博物馆每天上午十点开放，下午六点关门，法定节假日除外。",
    "停电以后，工程师们在一分钟之内就启动了备用发电机，工厂恢复了生产。",
    "您的订单已于三月十二日发货，预计四到六个工作日内送达，请注意查收。",
    "十二岁以下的儿童由持有效车票的成人陪同时，可以免费乘车。",
)
TITLES = {"en": ("Notice to Travellers", "Weekly Report", "Opening Hours", "Weather and Roads"),
          "ch": ("旅客须知", "每周报告", "营业时间", "天气与交通")}
#: how the pages of each language look, one page each: clean print, faint ink, blur with noise, a 1.5-degree tilt
PAGE_LOOKS = ("clean", "faint", "blurred", "tilted")
LINE_STYLES = (LineStyle(), LineStyle(color=False), LineStyle(blur=0.8), LineStyle(noise=9.0),
               LineStyle(spacing=2), LineStyle(background=(150, 210), foreground=(0, 50)))


def _snippet(rng: random.Random, language: str) -> str:
    """A run of words (English: 2-8) or characters (Chinese: 4-16) cut from a corpus sentence."""
    sentence = rng.choice(ENGLISH if language == "en" else CHINESE)
    if language == "en":
        words = sentence.split()
        n = rng.randint(2, min(8, len(words)))
        start = rng.randint(0, len(words) - n)
        return " ".join(words[start:start + n])
    n = rng.randint(4, min(16, len(sentence)))
    start = rng.randint(0, len(sentence) - n)
    return sentence[start:start + n]


def make_lines(count: int, language: str, seed: int) -> list[tuple[np.ndarray, str]]:
    """``count`` rendered lines with their truth, varied in height, weight and style."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        text = _snippet(rng, language)
        image = render_line(text, height=rng.choice((32, 40, 48, 56, 64)), seed=seed * 1000 + i,
                            style=LINE_STYLES[i % len(LINE_STYLES)], bold=rng.random() < 0.3)
        out.append((image, text))
    return out


def _wrap(text: str, font, width: int, language: str) -> list[str]:
    """``text`` broken into lines no wider than ``width`` pixels (at spaces in English, anywhere in Chinese)."""
    units = text.split() if language == "en" else list(text)
    joiner = " " if language == "en" else ""
    lines, current = [], ""
    for unit in units:
        trial = current + joiner + unit if current else unit
        if current and font.getlength(trial) > width and unit not in "，。、；：":  # no line opens on a comma
            lines.append(current)
            current = unit
        else:
            current = trial
    return lines + [current] if current else lines


def make_page(language: str, seed: int, look: str = "clean", size: tuple[int, int] = (960, 720)
              ) -> tuple[np.ndarray, str]:
    """A page of a bold title and 3-4 paragraphs of wrapped corpus sentences, looking as :data:`PAGE_LOOKS` says;
    returns the RGB image and its text (one line per row, top to bottom)."""
    rng = random.Random(seed)
    h, w = size
    margin = 40
    paper = rng.randint(225, 252)
    image = Image.new("RGB", (w, h), (paper, paper, max(paper - rng.randint(0, 12), 0)))
    draw = ImageDraw.Draw(image)
    ink = tuple(rng.randint(*((95, 125) if look == "faint" else (10, 60))) for _ in range(3))
    title = rng.choice(TITLES[language])
    font = load_font(font_for(title, bold=True), rng.randint(32, 38))
    y = margin
    rows: list[str] = []

    def put(text: str, font, x: int) -> int:
        left, top, _, bottom = font.getbbox(text)
        draw.text((x - left, y - top), text, font=font, fill=ink)
        rows.append(text)
        return int(bottom - top)

    y += put(title, font, margin) + 24
    corpus = list(ENGLISH if language == "en" else CHINESE)
    rng.shuffle(corpus)
    taken = 0
    for _ in range(rng.randint(3, 4)):
        size_px = rng.randint(16, 28)
        font = load_font(font_for(corpus[0]), size_px)
        count = rng.randint(2, 4)
        text = (" " if language == "en" else "").join(corpus[taken:taken + count])
        taken += count
        indent = 0 if language == "en" else 2 * size_px
        for k, line in enumerate(_wrap(text, font, w - 2 * margin - indent, language)):
            if y + size_px + margin > h:
                break
            height = put(line, font, margin + (indent if k == 0 else 0))
            y += max(height, size_px) + int(size_px * 0.6)
        y += int(size_px * 0.9)
    array = np.asarray(image).astype(np.float32)
    if look == "tilted":
        matrix = cv2.getRotationMatrix2D((w / 2, h / 2), rng.choice((-1.5, 1.5)), 1.0)
        array = cv2.warpAffine(array, matrix, (w, h), borderMode=cv2.BORDER_REPLICATE, flags=cv2.INTER_LINEAR)
    if look == "blurred":
        array = cv2.GaussianBlur(array, (0, 0), 0.8)
    array += np.random.default_rng(seed).normal(0, 7.0 if look == "blurred" else 3.0, array.shape)
    return np.clip(array, 0, 255).astype(np.uint8), "\n".join(rows)


def _busy_cpu_seconds() -> float:
    """CPU seconds the whole machine has spent busy, all cores together (``/proc/stat``; 0 where it is missing)."""
    try:
        fields = [float(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except OSError:
        return 0.0
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


def _strip(text: str) -> str:
    return "".join(text.split())


def _cer(predictions: list[str], truths: list[str]) -> float:
    return character_error_rate([_strip(p) for p in predictions], [_strip(t) for t in truths])


def _params(module: torch.nn.Module) -> float:
    return sum(p.numel() for p in module.parameters()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=40, help="rendered lines per language")
    parser.add_argument("--pages", type=int, default=4, help="rendered pages per language")
    parser.add_argument("--rounds", type=int, default=3, help="timed passes over the pages")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default="bench/results/ocr_versions.md")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    lines = {lang: make_lines(args.lines, lang, seed) for lang, seed in (("en", 1), ("ch", 2))}
    pages = [(lang, *make_page(lang, 100 + i, PAGE_LOOKS[i % len(PAGE_LOOKS)]))
             for i in range(args.pages) for lang in ("en", "ch")]
    builds, engines = {}, {}  # seconds to build each pipeline with its weights; the pipelines
    for version in VERSIONS:
        tic = time.perf_counter()
        engines[version] = OCR(version=version)
        builds[version] = time.perf_counter() - tic

    # recognition alone on the line crops
    line_cer, line_exact = {}, {}
    for version, ocr in engines.items():
        for lang, items in lines.items():
            read = [text for text, _ in recognize(ocr.stages["rec"], [im for im, _ in items], batch_size=6)]
            truth = [t for _, t in items]
            line_cer[version, lang] = _cer(read, truth)
            line_exact[version, lang] = sum(_strip(r) == _strip(t) for r, t in zip(read, truth))

    # the whole pipeline on the pages, interleaved
    names = list(engines)
    for ocr in engines.values():  # warm-up
        ocr(pages[0][1])
    texts = {name: [""] * len(pages) for name in names}
    times: dict[str, list[float]] = {name: [] for name in names}
    busy, own, wall = _busy_cpu_seconds(), time.process_time(), time.perf_counter()
    for r in range(args.rounds):
        for p, (_, image, _) in enumerate(pages):
            shift = (r + p) % len(names)
            for name in names[shift:] + names[:shift]:
                tic = time.perf_counter()
                texts[name][p] = engines[name](image).text
                times[name].append(time.perf_counter() - tic)
    load_after = os.getloadavg()
    busy, own, wall = _busy_cpu_seconds() - busy, time.process_time() - own, time.perf_counter() - wall
    others = max(0.0, busy - own) / wall  # cores other processes kept busy while the pages were timed

    page_cer, page_edits = {}, {}
    for name in names:
        page_edits[name] = sum(edit_distance(_strip(texts[name][i]), _strip(pages[i][2])) for i in range(len(pages)))
        for lang in ("en", "ch", "all"):
            idx = [i for i, page in enumerate(pages) if lang in ("all", page[0])]
            page_cer[name, lang] = _cer([texts[name][i] for i in idx], [pages[i][2] for i in idx])
    ms = {name: statistics.median(times[name]) * 1000 for name in names}
    eligible = [n for n in names if ms[n] <= LATENCY_BUDGET * ms[BASELINE]]
    best = min(eligible, key=lambda n: (page_cer[n, "all"], ms[n]))

    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError, StopIteration):
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    page_chars = sum(len(_strip(t)) for _, _, t in pages)
    head = [
        f"# OCR versions side by side ({datetime.date.today().isoformat()})",
        "",
        f"`python bench/ocr_versions.py --rounds {args.rounds} --threads {args.threads}` on {cpu} "
        f"({os.cpu_count()} cores, shared), torch {torch.__version__} eager fp32, torch threads {args.threads}; "
        f"load average (1, 5, 15 min) {', '.join(f'{v:.2f}' for v in load_before)} before and "
        f"{', '.join(f'{v:.2f}' for v in load_after)} after (this bench itself keeps about {args.threads} busy); other "
        f"processes used {others:.2f} of the {os.cpu_count()} cores on average while the pages were timed. Versions "
        f"timed interleaved (rotating order per page).",
        "",
        f"Lines: {args.lines} English + {args.lines} Chinese rendered lines (heights 32-64, regular and bold, six "
        f"styles), recognizer alone. Pages: {args.pages} English + {args.pages} Chinese rendered pages of 960x720 "
        f"(a title and 3-4 paragraphs; per language one page each {', '.join(PAGE_LOOKS)}; {page_chars} characters in "
        f"all), the whole det -> rec pipeline "
        f"with each detector's published DB settings, reading-order text against the truth; ms per page: median "
        f"of {args.rounds} rounds x {len(pages)} pages. CER ignores whitespace.",
        "",
        "| version | det + rec | params (M) | line CER en | line CER ch | exact lines | page CER en | page CER ch "
        "| page CER all (edits) | ms / page | x PP-OCRv4 | build (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = []
    for name in names:
        ocr = engines[name]
        det, rec = VERSIONS[name]
        params = f"{_params(ocr.stages['det'].model):.1f} + {_params(ocr.stages['rec'].model):.1f}"
        exact = line_exact[name, "en"] + line_exact[name, "ch"]
        rows.append(
            f"| {name}{' (default)' if name == best else ''} | `{det.split('/')[1]}` + `{rec.split('/')[1]}` | "
            f"{params} | {100 * line_cer[name, 'en']:.2f}% | {100 * line_cer[name, 'ch']:.2f}% | "
            f"{exact}/{2 * args.lines} | {100 * page_cer[name, 'en']:.2f}% | {100 * page_cer[name, 'ch']:.2f}% | "
            f"{100 * page_cer[name, 'all']:.2f}% ({page_edits[name]}) | {ms[name]:.0f} | "
            f"{ms[name] / ms[BASELINE]:.2f} | {builds[name]:.1f} |")
    verdict = (f"Choice: {best} reads best (page CER {100 * page_cer[best, 'all']:.2f}%, English and Chinese "
               f"together) among the versions within {LATENCY_BUDGET}x PP-OCRv4's ms per page "
               f"({', '.join(eligible)}).")
    if best != DEFAULT_VERSION:
        verdict += f" OCR()'s DEFAULT_VERSION is {DEFAULT_VERSION}: change it to {best}."
    table = "\n".join(head + rows + ["", verdict, ""])
    print(table)
    for p, (lang, _, truth) in enumerate(pages):
        for name in names:
            if _strip(texts[name][p]) != _strip(truth):
                cer = _cer([texts[name][p]], [truth])
                print(f"page {p} ({lang}, {PAGE_LOOKS[p // 2 % len(PAGE_LOOKS)]}) {name}: CER {100 * cer:.2f}%")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(table, encoding="utf-8")
        print(f"written: {args.out}")


if __name__ == "__main__":
    main()
