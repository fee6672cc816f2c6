"""Text to render: English words and Chinese phrases built in, and random lines drawn from them."""

from __future__ import annotations

import random

_ENGLISH = (
    "the of and to in is you that it he was for on are as with his they at be this have from or one had "
    "by word but not what all were we when your can said there use an each which she do how their if "
    "will up other about out many then them these so some her would make like him into time has look two "
    "more write go see number no way could people my than first water been call who oil its now find "
    "long down day did get come made may part over new sound take only little work know place year live "
    "me back give most very after thing our just name good sentence man think say great where help "
    "through much before line right too mean old any same tell boy follow came want show also around "
    "form three small set put end does another well large must big even such because turn here why ask "
    "went men read need land different home us move try kind hand picture again change off play spell "
    "air away animal house point page letter mother answer found study still learn should America world "
    "London Paris Monday Friday March October invoice total amount date order price payment account "
    "street station report office market river garden window doctor school "
)
ENGLISH_WORDS = tuple(_ENGLISH.split())

_CHINESE = (
    "中华人民共和国 北京 上海 广州 深圳 欢迎光临 营业时间 今天天气很好 我们一起学习 人工智能 "
    "深度学习 文字识别 光学字符识别 计算机视觉 自然语言处理 开放源代码 飞桨 百度 火车站 出口 "
    "入口 禁止吸烟 注意安全 小心地滑 请勿停车 银行 医院 学校 图书馆 博物馆 超市 餐厅 咖啡 "
    "茶叶 新鲜水果 特价商品 会员优惠 发票 合计 金额 日期 订单编号 联系电话 地址 东方明珠 "
    "长江 黄河 春节快乐 中秋节 生日快乐 恭喜发财 一路平安 谢谢 你好 再见 早上好 晚上好 "
    "电话号码 电子邮件 网上购物 手机 电脑 软件 硬件 数据 模型 训练 测试 结果 准确率 "
)
CHINESE_PHRASES = tuple(_CHINESE.split())


def english_line(rng: random.Random, *, min_words: int = 1, max_words: int = 4) -> str:
    """A few random English words, sometimes capitalised or followed by a number."""
    words = [rng.choice(ENGLISH_WORDS) for _ in range(rng.randint(min_words, max_words))]
    if rng.random() < 0.3:
        words[0] = words[0].capitalize()
    if rng.random() < 0.2:
        words.append(str(rng.randint(1, 2030)))
    return " ".join(words)


def chinese_line(rng: random.Random, *, max_phrases: int = 2) -> str:
    """One or two Chinese phrases, sometimes with a number."""
    text = "".join(rng.choice(CHINESE_PHRASES) for _ in range(rng.randint(1, max_phrases)))
    if rng.random() < 0.2:
        text += str(rng.randint(1, 99))
    return text


def random_line(rng: random.Random, language: str) -> str:
    """A line in ``en``, ``ch`` or ``mixed`` (either, at random)."""
    if language == "mixed":
        language = rng.choice(("en", "ch"))
    return chinese_line(rng) if language == "ch" else english_line(rng)
