"""Copy kinds and near-miss negatives for Chinese, Japanese and Thai news.

Used by :mod:`.lang_suite` (``streamdedup bench accuracy --suite zh|ja|th``). Every generator
is deterministic given its ``random.Random`` and returns the new text, or None when the story does
not suit the edit (the harness then picks another story). A story is a title and a body of
paragraphs, one per line (:mod:`streamdedup.bench.corpus_cjk`).

Sentences end at 。！？ (with any closing quote or bracket after the mark) in Chinese and
Japanese; Thai has no sentence mark and separates sentences and clauses with a space, so a Thai
"sentence" is a run between spaces.
"""

from __future__ import annotations

import random
import re
import unicodedata

#: visually or phonetically confusable Han characters (OCR, pinyin and wubi input slips); a
#: character of a group is replaced by another of its group
HAN_CONFUSIONS = (
    "己已巳", "未末", "土士", "人入八", "日曰", "大太犬", "天夫", "王玉主", "刀力", "干千于", "戊戌戍", "候侯",
    "们门", "在再", "的地得", "做作", "坐座", "象像", "以已", "即既", "带戴", "须需", "副付", "记纪", "部步",
    "权全", "式试", "济际", "导到", "经径", "城成", "事是市", "今令", "田由甲申", "鸟乌", "折拆", "历厉",
    "义议", "利力立", "工功攻", "进近", "发法", "和合", "重众", "期其", "长常场", "国过", "会汇", "民明",
)
KANA_CONFUSIONS = ("シツ", "ソン", "クタ", "ぬめ", "われね", "はほ", "るろ", "ぱば", "ぴび", "ぷぶ", "ぺべ", "ぽぼ", "っつ", "ゃや")
THAI_CONFUSIONS = ("ดค", "บป", "ฎฏ", "ถภ", "ผฝ", "พฟ", "ขฃ", "คฅ", "ษฆ", "ชซ", "ทห", "ลส", "่้", "ิี", "ึื", "ุู")
_CONFUSABLE = {ch: group.replace(ch, "") for groups in (HAN_CONFUSIONS, KANA_CONFUSIONS, THAI_CONFUSIONS)
               for group in groups for ch in group}

_SENT_END = {
    "zh": re.compile(r"[。！？][”’」』）)]*"),
    "ja": re.compile(r"[。！？][”’」』）)]*"),
}


def sentences(paragraph: str, lang: str) -> list[str]:
    """The sentences of one paragraph (see the module docstring), marks and spaces kept."""
    if lang == "th":
        return [s for s in re.split(r"(?<=\S)(?=\s+\S)", paragraph) if s.strip()]
    pattern = _SENT_END[lang]
    out, start = [], 0
    for m in pattern.finditer(paragraph):
        out.append(paragraph[start:m.end()])
        start = m.end()
    if paragraph[start:].strip():
        out.append(paragraph[start:])
    return out


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    for key in ("CJK", "HIRAGANA", "KATAKANA", "THAI", "DIGIT", "LATIN"):
        if key in name:
            return key
    return "OTHER"


def _pools(text: str) -> dict[str, list[str]]:
    pools: dict[str, list[str]] = {}
    for ch in sorted(set(text)):
        if not ch.isspace():
            pools.setdefault(_script(ch), []).append(ch)
    return pools


def _substitute(ch: str, pools: dict[str, list[str]], rng: random.Random) -> str:
    if ch in _CONFUSABLE and rng.random() < 0.5:
        return rng.choice(_CONFUSABLE[ch])
    pool = pools.get(_script(ch), ())
    choices = [c for c in rng.sample(pool, min(8, len(pool))) if c != ch]
    return choices[0] if choices else rng.choice("的一是在不了有和人这")


def char_noise(text: str, rate: float, rng: random.Random) -> str:
    """Exactly ``round(rate * len(text))`` single-character edits (at least one) at distinct
    non-space positions, each a substitution, a drop or an insertion with equal chance, so the
    Levenshtein distance to the original is that count (rarely less, when edits cancel).

    A substitution takes a confusable character of the same group (:data:`HAN_CONFUSIONS`, kana,
    Thai) half of the time, else a character of the same script drawn from the text itself (a
    garbled transmission yields ordinary characters); an insertion doubles the character or adds
    one of the same script.
    """
    eligible = [i for i, ch in enumerate(text) if not ch.isspace()]
    n = min(len(eligible), max(1, round(rate * len(text))))
    pools = _pools(text)
    chars = list(text)
    for pos in sorted(rng.sample(eligible, n), reverse=True):
        op = rng.randrange(3)
        ch = chars[pos]
        if op == 0:
            chars[pos] = _substitute(ch, pools, rng)
        elif op == 1:
            del chars[pos]
        else:
            chars.insert(pos + 1, ch if rng.random() < 0.3 else rng.choice(pools.get(_script(ch), [ch])))
    return "".join(chars)


def teaser(title: str, body: str, n_sentences: int, lang: str, chars: tuple[int, int], max_share: float) -> str | None:
    """Headline + the first ``n_sentences`` sentences of the body, if that teaser is ``chars``
    characters long and its sentences at most ``max_share`` of the body (None if not)."""
    sents = [s for para in body.split("\n") for s in sentences(para, lang)]
    if len(sents) <= n_sentences:
        return None
    if lang != "th" and not all(_SENT_END[lang].search(s) for s in sents[:n_sentences]):
        return None  # a caption or a byline without a full stop is no sentence of the story
    lead = "".join(sents[:n_sentences]).strip()
    text = f"{title}\n{lead}"
    return text if chars[0] <= len(text) <= chars[1] and len(lead) <= max_share * len(body) else None


_ZH_NUM = "０１２３４５６７８９"
ZH_CITIES = ("北京", "上海", "广州", "南京", "武汉", "成都", "西安", "沈阳", "香港", "华盛顿", "莫斯科", "东京", "巴黎")
#: an agency line at the start of a People's Daily lead: 新华社北京１２月３１日电, 本报上海１月２日讯, 据新华社…电
_ZH_AGENCY = re.compile(r"^(?:据)?(?:新华社|本报)[^，。：]{0,10}?[０-９0-9一二三四五六七八九十]+月[０-９0-9一二三四五六七八九十]+日(?:电|讯)")
JA_CITIES = ("東京", "大阪", "名古屋", "札幌", "福岡", "ワシントン", "北京")
TH_CITIES = ("กรุงเทพฯ", "เชียงใหม่", "ภูเก็ต", "ขอนแก่น", "หาดใหญ่")


def _zh_date(rng: random.Random) -> str:
    month, day = rng.randint(1, 12), rng.randint(1, 28)
    digits = (lambda n: "".join(_ZH_NUM[int(c)] for c in str(n))) if rng.random() < 0.5 else str
    return f"{digits(month)}月{digits(day)}日"


def agency_line(lang: str, rng: random.Random) -> str:
    """A wire dateline as the language's agencies write it."""
    if lang == "zh":
        return f"{rng.choice(['新华社', '中新社', '本报'])}{rng.choice(ZH_CITIES)}{_zh_date(rng)}{rng.choice(['电', '讯'])}"
    if lang == "ja":
        return f"【{rng.choice(JA_CITIES)}{rng.choice(['共同', '時事'])}】"
    return f"{rng.choice(TH_CITIES)} ({rng.choice(['สำนักข่าวไทย', 'ไทยพีบีเอส'])}) -"


def new_headline(title: str, body: str, lang: str, rng: random.Random) -> str | None:
    """A resend with a rewritten headline (the lead's first clause, perhaps with a wire tag) and
    a new agency line in place of the lead's own (or in front of the lead)."""
    paras = body.split("\n")
    clause = re.split(r"[，。！？、：；,\s]", _ZH_AGENCY.sub("", paras[0]).strip(), maxsplit=1)[0] if lang != "th" else paras[0].split()[0]
    if len(clause) < 4 or clause == title:
        return None
    tag = {"zh": ["", "（更新）", "快讯：", "综述："], "ja": ["", "（更新）", "速報："], "th": ["", "ด่วน: ", "(อัปเดต) "]}[lang]
    headline = rng.choice(tag) + clause[:30]
    line = agency_line(lang, rng)
    lead = _ZH_AGENCY.sub(line, paras[0], count=1) if lang == "zh" and _ZH_AGENCY.match(paras[0]) else f"{line}{' ' if lang == 'th' else ''}{paras[0]}"
    return "\n".join([headline, lead, *paras[1:]])


def replace_sentence(title: str, body: str, donor: str, lang: str, rng: random.Random, min_sentences: int) -> str | None:
    """One sentence (not the lead) swapped for a donor sentence of about its length; needs
    ``min_sentences`` sentences (in a shorter story one sentence is too much of it)."""
    paras = [sentences(p, lang) for p in body.split("\n")]
    slots = [(i, j) for i, sents in enumerate(paras) for j in range(len(sents)) if (i, j) != (0, 0)]
    donor_sents = [s for p in donor.split("\n") for s in sentences(p, lang) if len(s.strip()) >= 8]
    if len(slots) + 1 < min_sentences or not donor_sents:
        return None
    i, j = rng.choice(slots)
    old = paras[i][j]
    paras[i][j] = min(rng.sample(donor_sents, min(8, len(donor_sents))), key=lambda d: abs(len(d) - len(old)))
    if paras[i][j] == old:
        return None
    return "\n".join([title, *("".join(s) for s in paras)])


def drop_paragraph(title: str, body: str, rng: random.Random, max_share: float = 0.25) -> str | None:
    """The story without one paragraph (not the lead) of at most ``max_share`` of the body."""
    paras = body.split("\n")
    fits = [i for i in range(1, len(paras)) if len(paras[i]) <= max_share * len(body)]
    if len(paras) < 3 or not fits:
        return None
    drop = rng.choice(fits)
    return "\n".join([title, *(p for i, p in enumerate(paras) if i != drop)])


_FULL = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}
_HALF = {v: k for k, v in _FULL.items() if v != 0x20}


def to_halfwidth(text: str) -> str:
    """Full-width ASCII forms (digits, Latin letters, punctuation, U+3000) to their ASCII forms."""
    return text.translate(_FULL)


def to_fullwidth(text: str) -> str:
    """ASCII digits, letters and punctuation to their full-width forms (spaces kept)."""
    return text.translate(_HALF)


def width_forms(title: str, body: str) -> str | None:
    """The story with full-width forms made half-width, or (a text with more ASCII than
    full-width forms) ASCII made full-width; None if fewer than three characters change."""
    text = f"{title}\n{body}"
    full = sum(1 for ch in text if ord(ch) in _FULL)
    half = sum(1 for ch in text if ord(ch) in _HALF)
    out = to_halfwidth(text) if full >= half else to_fullwidth(text)
    return out if sum(a != b for a, b in zip(out, text)) >= 3 else None


_OPENCC: dict[str, object] = {}


def traditional(title: str, body: str) -> str | None:
    """The story in Traditional characters (OpenCC's s2t tables); None if nothing changes."""
    from streamdedup._optional import require

    if "s2t" not in _OPENCC:
        _OPENCC["s2t"] = require("opencc", "bench", "the Traditional-script copies of streamdedup bench accuracy --suite zh").OpenCC("s2t.json")
    text = f"{title}\n{body}"
    out = _OPENCC["s2t"].convert(text)
    return out if out != text else None


#: long footers a desk appends to unrelated stories (written for this benchmark)
FOOTERS = {
    "zh": (
        "（本报记者整理）欢迎广大读者对本版报道提出意见和建议。来信请寄本报编辑部读者服务处，来稿请注明真实姓名、"
        "工作单位和联系电话。本版所刊稿件，未经许可，不得转载、摘编；转载请与本报版权部门联系，并注明出处。",
        "版权声明：凡本网注明来源的所有作品，版权均属本社所有，任何媒体、网站或个人未经本社协议授权不得转载、链接、"
        "转贴或以其他方式复制发表。已经本社协议授权的媒体、网站，在下载使用时必须注明稿件来源，违者本社将依法追究责任。",
        "编者按：为了帮助读者更好地了解经济形势，本报从今天起开设专栏，邀请有关部门负责同志和专家学者撰文，"
        "就当前经济工作中的热点问题进行分析和解答。欢迎读者来信提出希望了解的问题，我们将择要刊登。",
    ),
    "ja": (
        "この記事の内容は配信時点のものです。記事の無断転載、複製、改変、翻訳は固く禁じます。ご意見やご感想は"
        "編集部までお寄せください。掲載された情報は予告なく変更される場合がありますので、あらかじめご了承ください。",
        "本紙では読者の皆様からの情報提供をお待ちしています。身の回りで起きた出来事や疑問に思うことがありましたら、"
        "住所、氏名、電話番号を明記のうえ、郵送または電子メールでお知らせください。いただいた情報は取材に活用します。",
    ),
    "th": (
        "ข่าวนี้เผยแพร่ครั้งแรกโดยกองบรรณาธิการ ห้ามคัดลอก ดัดแปลง หรือเผยแพร่ซ้ำโดยไม่ได้รับอนุญาตเป็นลายลักษณ์อักษร "
        "ผู้อ่านที่มีข้อเสนอแนะหรือต้องการแจ้งข่าวสามารถติดต่อกองบรรณาธิการได้ทุกวันในเวลาทำการ",
        "ติดตามข่าวสารล่าสุดได้ทางเว็บไซต์และช่องทางออนไลน์ของเรา ข้อมูลในข่าวนี้เป็นข้อมูล ณ วันที่เผยแพร่ "
        "และอาจมีการเปลี่ยนแปลงในภายหลัง โปรดตรวจสอบข้อมูลจากแหล่งที่เป็นทางการอีกครั้งก่อนนำไปใช้",
    ),
}
QUOTE_INTROS = {
    "zh": ("此前有报道说：", "据本报此前报道，", "有关方面早些时候表示："),
    "ja": ("先に報じられたところによると、", "これに先立ち、関係者は次のように述べた。"),
    "th": ("ก่อนหน้านี้มีรายงานว่า ", "แหล่งข่าวระบุไว้ก่อนหน้านี้ว่า "),
}


def _background(body: str, chars: tuple[int, int], rng: random.Random) -> str | None:
    """A paragraph other than the lead, ``chars`` characters long (None if the story has none)."""
    fits = [p for p in body.split("\n")[1:] if chars[0] <= len(p) <= chars[1]]
    return rng.choice(fits) if fits else None


def quoting_paragraph(title: str, body: str, earlier_body: str, lang: str, chars: tuple[int, int], rng: random.Random) -> str | None:
    """A new story that quotes one paragraph of an earlier story after its own lead paragraph."""
    quote = _background(earlier_body, chars, rng)
    paras = body.split("\n")
    if quote is None or len(paras) < 2:
        return None
    intro = rng.choice(QUOTE_INTROS[lang])
    quoted = f"“{quote}”" if lang == "zh" else f"「{quote}」" if lang == "ja" else f"\"{quote}\""
    return "\n".join([title, paras[0], intro + quoted, *paras[1:]])


def background_lead(title: str, body: str, earlier_body: str, chars: tuple[int, int], rng: random.Random) -> str | None:
    """A new story that opens with an earlier story's background paragraph, then its own text."""
    para = _background(earlier_body, chars, rng)
    return None if para is None else "\n".join([title, para, body])


def with_footer(title: str, body: str, footer: str) -> str:
    return f"{title}\n{body}\n{footer}"
