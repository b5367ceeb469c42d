"""Which status a setting said in a message has, read by a small learned model (issue 30). Pure.

The rules (``app.core.render_settings.extraction``) find the (parameter, value) pairs a message states; this module
decides what each pair is — **applied**, **proposed**, **rejected**, or **none** (not a setting the
message states) — from the words that govern the value: the tokens left and right of it (by distance),
the classes of those words (a negation, "keep", "back to", "instead", a question, a complaint or
praise, the past), whether they sit across a clause boundary, where the parameter's name is, other
values of the same parameter in the message and on which side, what the conversation just proposed
or applied, and the rules' own reading as one feature among the others.

The model is a multinomial logistic regression over those features, trained by
``bench/train_status.py`` from ``bench/data`` (fixed seed) and shipped as
``resources/status_model.json``; reading it costs a few dictionary look-ups per feature. A reading
whose probability is under the model's ``sure`` threshold is kept, marked unsure: the ledger asks
before taking it as the decided value.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

from app.core.render_settings import parameters as P

if TYPE_CHECKING:  # (extraction imports this module)
    from app.core.render_settings.mentions import Context, Mention

NONE = "none"
CLASSES = ("applied", "proposed", "rejected", NONE)

# word classes: what a word does to the value it governs (the weights say how much, and which way)
WORD_CLASSES: dict[str, str] = {}
for _cls, _words in {
    "neg": "no not never nah nope didn't didnt don't dont doesn't doesnt wasn't wasnt isn't isnt won't wont "
           "without nothing none can't cant couldn't shouldn't aren't weren't",
    "keep": "keep kept keeping stay stays staying stayed stick sticking stuck leave leaving left remain remains hold",
    "back": "back revert reverted reverting undo undid undone restore restored return returned rollback rolled",
    "alt": "instead rather than vs versus or either",
    "ask": "would should could might maybe perhaps try trying consider suggest suggestion what how whether "
           "wondering thinking idea ideas option perhaps shall worth recommend proposal",
    "if": "if unless",
    "past": "was were had tried tested been did previously before earlier originally yesterday",
    "now": "now currently current final finally it's is are",
    "change": "set went go going switched switch changed change moved bumped dropped raised lowered using use "
              "put landed settled upped cranked pushed pulled reduced increased halved doubled enabled disabled "
              "turned chose picked applied locked made",
    "bad": "worse worst blotchy noisy slow slower grainy flickering muddy dirty dull flat mushy crunchy "
           "splotchy ugly broke crashed crash waste wasted expensive overkill forever hated hate boiling soft blurry "
           "harsh dark wrong bad smeary blown clipped flickers flickered",
    "problem": "noise fireflies firefly artifacts artefacts banding flicker blotches blotching grain splotches "
               "sparkles speckles moire aliasing jaggies problem issue",
    "remove": "kills kill killed fixes fixed removes removed cleans cleaned cleared clears tames tamed solves "
              "solved reduces reduced cuts cut gone eliminates eliminated",
    "too": "too",
    "good": "good great better best clean cleaner perfect nice fixed gone works worked fine ok okay love loved "
            "solid sharp sharper fast faster happy lovely beautiful identical enough approved wins clean",
    "future": "will ll gonna later tomorrow next plan planning going_to",
    "you": "you your you'd you're",
    "reject": "rejected reject nixed scrapped scrap ditch ditched drop forget skip skipped nope pass veto vetoed",
    "confirm": "done yes yep yeah yup sure deal agreed confirmed",
}.items():
    for _w in _words.split():
        WORD_CLASSES[_w] = _cls

_CLAUSE_MARK = re.compile(r"[,;:()—–!]|\s-\s|\.\s")
_CLAUSE = re.compile(r"[,;:()—–]|\s-\s|\bbut\b|\bso\b|\band then\b")
_NUMERIC = re.compile(r"^[-+~]?\d")


@dataclass(frozen=True)
class StatusModel:
    """The trained weights: feature → one weight per class (``CLASSES``), and the threshold under
    which an applied or rejected reading is unsure."""

    weights: dict[str, tuple[float, ...]]
    sure: float = 0.0
    doubt: float = 1.0  # a "none" reading whose applied + rejected probability reaches this is kept, unsure
    classes: tuple[str, ...] = CLASSES

    @classmethod
    def from_json(cls, data: dict) -> "StatusModel":
        classes = tuple(data.get("classes") or CLASSES)
        weights = {str(k): tuple(float(x) for x in v) for k, v in (data.get("weights") or {}).items()
                   if isinstance(v, list) and len(v) == len(classes)}
        return cls(weights=weights, sure=float(data.get("sure", 0.0)), doubt=float(data.get("doubt", 1.0)),
                   classes=classes)

    def probabilities(self, features: list[str]) -> list[float]:
        n = len(self.classes)
        z = [0.0] * n
        for f in features:
            w = self.weights.get(f)
            if w is not None:
                for k in range(n):
                    z[k] += w[k]
        top = max(z)
        e = [math.exp(v - top) for v in z]
        s = sum(e)
        return [v / s for v in e]


def _norm(tok: str) -> str:
    if _NUMERIC.match(tok) or tok.startswith("f/"):
        return "<num>"
    return tok


class Sentence:
    """One sentence of a message: its tokens and the parameter names in it, worked out once (and only
    if a reading in it needs them)."""

    def __init__(self, text: str, cat) -> None:
        self.text, self.cat = text, cat

    @cached_property
    def toks(self) -> list[tuple[str, int]]:
        return P.tokens(self.text)

    @cached_property
    def words(self) -> list[str]:
        return [t for t, _ in self.toks]

    @cached_property
    def found(self) -> list:
        return self.cat.find(self.words)

    @cached_property
    def clauses(self) -> list[int]:
        """The clause each token is in: a new one after , ; : ( — or before "but", "so", "then"."""
        out, n, end = [], 0, 0
        for tok, at in self.toks:
            if _CLAUSE_MARK.search(self.text[end:at]) or tok in ("but", "so", "then", "though", "although"):
                n += 1
            out.append(n)
            end = at + len(tok)
        return out

    def names(self, ident: tuple[str, str]) -> list[tuple[int, int]]:
        """Where the parameter ``ident`` is named: (start, end) in ``words``."""
        return [(s, e) for s, e, w in self.found if not isinstance(w, str) and any(x.ident == ident for x in w)]


def locate(m: "Mention", said: Sentence, cat) -> int:
    """The token of the sentence the mention's value was read from (-1: not said there)."""
    spec = cat.specs.get((m.engine, m.parameter))
    if spec is None or m.value is None:
        return -1
    words = said.words
    hits = []
    if spec.kind == "enum":
        hits = [i for i in range(len(words)) if (hit := cat.enum_value(spec, words, i)) and hit[0] == m.value]
    elif spec.kind == "bool":
        hits = [i for i, t in enumerate(words) if P.bool_word(t) is m.value]
    else:
        target = m.value[0] if isinstance(m.value, tuple) else m.value
        for i, t in enumerate(words):
            if spec.kind == "resolution":
                if P.resolution(t) == target:
                    hits.append(i)
                continue
            if spec.kind == "text":
                if t == str(target).lower():
                    hits.append(i)
                continue
            num = P.parse_number(t)
            got = P.number_for(spec, num) if num is not None else None
            if got is not None and P.same_value(got[0], target):
                hits.append(i)
    if not hits:
        return -1
    names = [s for s, _ in said.names(spec.ident)]
    if not names:
        return hits[0]
    return min(hits, key=lambda i: min(abs(i - a) for a in names))


def features(m: "Mention", index: int, mentions: list["Mention"], sentences: list[Sentence], role: str,
             ctx: "Context", cat) -> list[str]:
    """What the model reads about one mention (``index`` in ``mentions``, the message's readings)."""
    f = ["bias", f"rule={m.status}", f"role={role}", f"rule_role={m.status}|{role}", f"kind={_kind(m, cat)}"]
    if m.restore:
        f.append("flag=restore")
    if m.before:
        f.append("flag=before")
    if m.confirmed:
        f.append("flag=confirmed")
    if m.guessed:
        f.append(f"guessed={m.guessed}")
        f.append(f"guessed_rule={m.guessed}|{m.status}")
    if m.value is None:
        f.append("value=none")
    elif isinstance(m.value, bool):
        f.append(f"value={m.value}")
    said = sentences[m.sentence] if 0 <= m.sentence < len(sentences) else Sentence("", cat)
    sentence, toks, words = said.text, said.toks, said.words
    at = locate(m, said, cat) if toks else -1
    f.append(f"sent_q={sentence.rstrip().endswith('?')}")
    f.append(f"sent_first={m.sentence == 0}")
    f.append(f"sent_last={m.sentence == len(sentences) - 1}")
    if words and words[0] in ("no", "nope", "nah", "not"):
        f.append("sent_starts_no")
    if words and WORD_CLASSES.get(words[0]):
        f.append(f"sent_starts={WORD_CLASSES[words[0]]}")
    if at < 0:
        f.append("unlocated")
        for t in words:
            cls = WORD_CLASSES.get(t)
            if cls:
                f.append(f"sent_has={cls}")
    else:
        for d in (1, 2, 3):
            f.append(f"L{d}={_norm(words[at - d]) if at - d >= 0 else '<s>'}")
            f.append(f"R{d}={_norm(words[at + d]) if at + d < len(words) else '</s>'}")
        if at + 1 < len(words) and at >= 1:
            f.append(f"LR={_norm(words[at - 1])}|{_norm(words[at + 1])}")
        for j, t in enumerate(words):
            if j == at:
                continue
            dist = abs(j - at)
            side = "L" if j < at else "R"
            lo, hi = (toks[j][1], toks[at][1]) if j < at else (toks[at][1], toks[j][1])
            crossed = bool(_CLAUSE.search(sentence[lo:hi]))
            bucket = "1" if dist <= 2 else "2" if dist <= 5 else "3" if dist <= 10 else "4"
            cls = WORD_CLASSES.get(t)
            if cls:
                f.append(f"{side}{bucket}:{cls}")
                f.append(f"{side}{bucket}:{cls}:{'x' if crossed else 'c'}")
            if dist <= 8:
                f.append(f"{side}w:{_norm(t)}")
                if not crossed:
                    f.append(f"{side}c:{_norm(t)}")
        f.append(f"pos={'first' if at <= 1 else 'early' if at <= 4 else 'mid'}")
        # which words govern the value: the nearest word of a class on each side within its clause
        clause = said.clauses
        gov_left = next((WORD_CLASSES[words[j]] for j in range(at - 1, -1, -1)
                         if clause[j] == clause[at] and words[j] in WORD_CLASSES), "none")
        gov_right = next((WORD_CLASSES[words[j]] for j in range(at + 1, len(words))
                          if clause[j] == clause[at] and words[j] in WORD_CLASSES), "none")
        f += [f"govL={gov_left}", f"govR={gov_right}", f"govLR={gov_left}|{gov_right}",
              f"govL={gov_left}|rule={m.status}", f"govR={gov_right}|rule={m.status}"]
        in_clause = {WORD_CLASSES.get(words[j]) for j in range(len(words)) if clause[j] == clause[at] and j != at}
        for cls in sorted(c for c in in_clause if c):
            f.append(f"clause:{cls}")
        if clause[at] == 0 and clause[-1] > 0:
            f.append("clause=first")
        elif clause[at] > 0:
            earlier = {WORD_CLASSES.get(words[j]) for j in range(len(words)) if clause[j] < clause[at]}
            for cls in ("neg", "reject", "keep", "back", "ask"):
                if cls in earlier:
                    f.append(f"earlier_clause:{cls}")
        right = [WORD_CLASSES.get(t) for t in words[at + 1:at + 9]]
        for k, cls in enumerate(right):  # "7 kills the fireflies": a problem removed is praise, not a complaint
            if cls == "remove" and "problem" in right[max(0, k - 3):k + 4]:
                f.append("R:removes_problem")
            if cls == "problem" and "bad" not in right and "too" not in right and "remove" not in right:
                f.append("R:problem_only")
        if toks:
            f.append(f"clause_left={bool(_CLAUSE.search(sentence[:toks[at][1]]))}")
    # the parameter's name: said before the value, after it, or not in this sentence
    spec = cat.specs.get((m.engine, m.parameter))
    if spec is not None and words:
        names = [s for s, _ in said.names(spec.ident)]
        if not names:
            f.append("name=absent")
        elif at >= 0:
            near = min(names, key=lambda a: abs(a - at))
            f.append(f"name={'before' if near < at else 'after'}{'_far' if abs(near - at) > 4 else ''}")
        else:
            f.append("name=here")
    # other readings of the same parameter in this message, and where
    for k, other in enumerate(mentions):
        if k == index or (other.engine, other.parameter, other.scope) != (m.engine, m.parameter, m.scope):
            continue
        side = "before" if (other.sentence, k) < (m.sentence, index) else "after"
        f.append(f"other_{side}")
        f.append(f"other_{side}={other.status}")
        if other.sentence == m.sentence:
            f.append(f"other_{side}_same_sentence")
    f.append(f"mentions={min(len(mentions), 4)}")
    # a later sentence of the message with no reading of its own, that judges what came before
    # ("Idea: shallow depth of field, f/2. Rejected, the client wants it sharp.")
    read_in = {x.sentence for x in mentions}
    for k in range(m.sentence + 1, len(sentences)):
        if k in read_in:
            continue
        later = {WORD_CLASSES.get(t) for t in sentences[k].words[:6]}
        for cls in ("reject", "neg", "good", "bad", "back", "confirm", "ask"):
            if cls in later:
                f.append(f"later_sentence:{cls}")
    # the rules' reading beside the words nearest the value that agree or disagree with it
    if at >= 0:
        near_left = {WORD_CLASSES.get(t) for t in words[max(0, at - 3):at]}
        near_right = {WORD_CLASSES.get(t) for t in words[at + 1:at + 4]}
        for cls in ("neg", "keep", "back", "alt", "ask", "bad", "good", "past", "too", "reject", "change", "future",
                    "problem", "remove"):
            if cls in near_left:
                f.append(f"rule={m.status}|L:{cls}")
            if cls in near_right:
                f.append(f"rule={m.status}|R:{cls}")
    # the conversation: what was just proposed or applied
    key = (m.engine, m.parameter)
    for name, group in (("proposed", ctx.proposals), ("applied", ctx.applied)):
        same_param = [p for p in group if (p.engine, p.parameter) == key]
        if same_param:
            f.append(f"ctx_{name}_param")
            if any(m.value is not None and P.same_value(p.value, m.value) for p in same_param):
                f.append(f"ctx_{name}_same")
    if any(s.ident == key for s in ctx.last):
        f.append("ctx_last_param")
    return f


def _doubted(mentions: list["Mention"], sentences: list[Sentence]) -> list["Mention"]:
    """Precision first, whatever the model's probability: a value applied under a negation in its own
    clause ("nah, not going to 4096"), or one of two values of a setting in a message with a negation
    ("No, keep 256 … blotchy at 128"), is read as unsure — the ledger asks which is meant."""
    values: dict[tuple, set] = {}
    for m in mentions:
        if m.value is not None and m.status in ("applied", "rejected"):
            values.setdefault((m.engine, m.parameter, m.scope), set()).add(repr(m.value))
    negation = any(WORD_CLASSES.get(t) in ("neg", "reject") for s in sentences for t in s.words)
    out = []
    for m in mentions:
        if m.sure and m.status == "applied" and not m.candidate:
            two = negation and len(values.get((m.engine, m.parameter, m.scope), ())) > 1
            if two or _negated(m, sentences):
                m = replace(m, sure=False)
        out.append(m)
    return out


def _negated(m: "Mention", sentences: list[Sentence]) -> bool:
    """A negation before the value in its clause: "not going to 4096", "no 0.02 on this one"."""
    if not 0 <= m.sentence < len(sentences) or m.value is None:
        return False
    said = sentences[m.sentence]
    at = locate(m, said, said.cat)
    if at < 0:
        return False
    clause = said.clauses
    return any(WORD_CLASSES.get(said.words[j]) == "neg" and clause[j] == clause[at] for j in range(at))


def _kind(m: "Mention", cat) -> str:
    spec = cat.specs.get((m.engine, m.parameter))
    return spec.kind if spec is not None else "candidate"


def read(model: StatusModel, mentions: list["Mention"], sentences: list[Sentence], role: str, ctx: "Context",
         cat) -> list["Mention"]:
    """The mentions with the model's statuses: "none" readings dropped, unsure ones marked."""
    out = []
    for n, m in enumerate(mentions):
        if m.candidate or (m.confirmed and not m.sure):
            out.append(m)  # (an option the answer did not choose between: the rules already doubt it)
            continue
        probs = model.probabilities(features(m, n, mentions, sentences, role, ctx, cat))
        best = max(range(len(probs)), key=probs.__getitem__)
        status = model.classes[best]
        p = dict(zip(model.classes, probs))
        doubtful = False
        if status == NONE:
            if role == "assistant" or p.get("applied", 0.0) + p.get("rejected", 0.0) < model.doubt:
                continue
            status, doubtful = max(("applied", "rejected"), key=lambda c: p.get(c, 0.0)), True
        if role == "assistant":
            status = "proposed"  # everything the model says is at most a proposal
        sure = status == "proposed" or (not doubtful and not m.guessed and probs[best] >= model.sure)
        # (a value the rules did not read, offered with a guessed parameter, is at most to confirm)
        out.append(replace(m, status=status, sure=sure, confidence=round(probs[best], 3)))
    out = _doubted(out, sentences)
    # "back to 12" turns down the value in force (the rules add that rejection, with no value, right
    # before the restore): the two are one reading, as sure as the restore is
    for k in range(len(out) - 1):
        m, nxt = out[k], out[k + 1]
        if m.value is None and m.status == "rejected" and nxt.restore and nxt.status == "applied" \
                and (m.engine, m.parameter, m.scope) == (nxt.engine, nxt.parameter, nxt.scope):
            out[k] = replace(m, sure=nxt.sure)
    return out
