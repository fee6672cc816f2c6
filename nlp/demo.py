"""The nlp demo: a templated intent dataset written offline, and Taskflow predictions from a trained run.

``prepare_intents`` fills sentence templates with slot values for eight assistant intents. Train and dev draw on
disjoint slot values and on partly disjoint templates, so the dev accuracy measures generalisation to unseen
phrasings and entities, not recall of training sentences. ``python -m oarkit.nlp text_classification RUN_DIR``
prints Taskflow's predictions for :data:`EXAMPLES`, a few new sentences.
"""

from __future__ import annotations

import random
from pathlib import Path

#: intent -> templates; ``{x}`` is filled from SLOTS[x]. The last template of each intent is held out for dev.
TEMPLATES: dict[str, list[str]] = {
    "book_flight": ["book a flight to {city}", "i need a plane ticket to {city} {day}", "find me flights to {city}",
                    "can you get me on a flight to {city} {day}", "fly me to {city}",
                    "i want to travel by plane to {city} {day}"],
    "weather": ["what is the weather in {city}", "will it rain in {city} {day}", "how hot is it in {city}",
                "is it going to snow {day}", "tell me the forecast for {city}",
                "do i need an umbrella in {city} {day}"],
    "play_music": ["play some {genre}", "put on {artist}", "i want to hear {artist}", "play {genre} music",
                   "start my {genre} playlist", "could you play something by {artist}"],
    "set_alarm": ["wake me up at {time}", "set an alarm for {time}", "alarm at {time} {day}",
                  "i need to get up at {time}", "remind me at {time} to get up", "make sure i am awake by {time}"],
    "order_food": ["order a {food}", "i want to order {food} for dinner", "get me a {food} delivered",
                   "can i get {food} from the nearest place", "deliver a {food} to my home",
                   "i am hungry, order some {food}"],
    "translate": ["translate {phrase} into {language}", "how do you say {phrase} in {language}",
                  "what is {phrase} in {language}", "say {phrase} in {language}",
                  "give me the {language} for {phrase}", "i need {phrase} translated to {language}"],
    "timer": ["set a timer for {minutes} minutes", "start a {minutes} minute timer", "count down {minutes} minutes",
              "timer {minutes} minutes please", "let me know when {minutes} minutes are up",
              "i need a countdown of {minutes} minutes"],
    "greeting": ["hello {name}", "good {daypart} {name}", "hi {name}, how are you", "hey {name}, how is it going",
                 "good {daypart} to you", "nice to meet you {name}"],
}
#: slot -> (train values, dev values)
SLOTS: dict[str, tuple[list[str], list[str]]] = {
    "city": (["paris", "london", "tokyo", "berlin", "madrid", "rome", "boston", "chicago", "seoul", "sydney"],
             ["lisbon", "denver", "osaka", "vienna", "dublin"]),
    "day": (["today", "tomorrow", "on monday", "on friday", "this weekend"], ["tonight", "on sunday", "next week"]),
    "genre": (["jazz", "rock", "classical", "hip hop", "blues"], ["reggae", "country", "techno"]),
    "artist": (["the beatles", "miles davis", "taylor swift", "beyonce", "queen"], ["adele", "nirvana", "abba"]),
    "time": (["7 am", "6:30", "8 in the morning", "noon", "9 pm"], ["5 am", "7:45", "midnight"]),
    "food": (["pizza", "burger", "sushi", "salad", "curry"], ["taco", "ramen", "sandwich"]),
    "phrase": (["good morning", "thank you", "where is the station", "how much is this", "i love you"],
               ["see you later", "excuse me", "good night"]),
    "language": (["french", "spanish", "german", "japanese", "italian"], ["korean", "portuguese", "dutch"]),
    "minutes": (["5", "10", "15", "20", "30"], ["3", "25", "45"]),
    "daypart": (["morning", "afternoon"], ["evening"]),
    "name": (["alex", "sam", "maria", "john", "emma", "there", "assistant"], ["lucas", "nina", "omar"]),
}
EXAMPLES = ["could you book me a flight to amsterdam on saturday", "is it sunny in cairo right now",
            "play a song by coldplay", "wake me at 6 tomorrow", "get me a pizza", "how do you say hello in greek",
            "set a timer for 12 minutes", "good evening"]


def _fill(template: str, values: dict[str, list[str]], rng: random.Random) -> str:
    out = template
    for slot in SLOTS:
        while "{" + slot + "}" in out:
            out = out.replace("{" + slot + "}", rng.choice(values[slot]), 1)
    return out


def prepare_intents(out: str | Path, *, per_template: int = 40, seed: int = 0) -> Path:
    """Write ``train.tsv``, ``dev.tsv`` and ``labels.txt`` of the intent set into ``out``; returns ``out``."""
    rng = random.Random(seed)
    train_values = {k: v[0] for k, v in SLOTS.items()}
    dev_values = {k: v[1] for k, v in SLOTS.items()}
    splits: dict[str, set[tuple[str, str]]] = {"train": set(), "dev": set()}
    for intent, templates in TEMPLATES.items():
        for i, template in enumerate(templates):
            held_out = i == len(templates) - 1
            for _ in range(per_template):
                if not held_out:
                    splits["train"].add((_fill(template, train_values, rng), intent))
                splits["dev"].add((_fill(template, dev_values, rng), intent))
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    for split, rows in splits.items():
        ordered = sorted(rows)
        rng.shuffle(ordered)
        lines = ["text\tlabel"] + [f"{text}\t{label}" for text, label in ordered]
        (root / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "labels.txt").write_text("\n".join(TEMPLATES) + "\n", encoding="utf-8")
    return root

