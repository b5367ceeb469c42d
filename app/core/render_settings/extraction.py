"""Render settings stated in a message, by rules: fast, offline, deterministic.

``extract(text, role, catalogue, context)`` finds parameter names (taxonomy synonyms, tolerant
of one-letter typos), the values said with them ("to 10", "1024 samples", "f/2.8", "on",
"brute force") and the status of each: **applied** (the artist set or confirmed it),
**proposed** (a suggestion; everything the model says) or **rejected**. Messages are read in
order with a :class:`Context` (the engine being talked about, the parameters just discussed,
the proposals waiting for an answer), so "ok, using 4" and "that didn't help, back to 25" are
understood. Unknown parameters next to a number in a sentence that names an engine are kept as
candidates. The words the rules look for are data, in the phrase book (:class:`app.core.render_settings.cues.Cues`,
read from ``resources/phrases/``). Pure: no I/O.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from app.core.render_settings import parameters as P
from app.core.render_settings.answer_tables import compared
from app.core.render_settings.cues import Cues
from app.core.render_settings.parameters import ANY, Catalogue, ParamSpec, Value
from app.core.render_settings.scope_model import ScopeModel
from app.core.render_settings.scope_model import candidates as scope_candidates
from app.core.render_settings.scopes import OBJECT_KEYS, known_object, scope_of
from app.core.render_settings.status_model import Sentence, StatusModel, locate
from app.core.render_settings.status_model import read as read_status

from app.core.render_settings.mentions import APPLIED, PROPOSED, REJECTED, Context, Mention
STATUSES = (APPLIED, PROPOSED, REJECTED)
MAX_TEXT = 20_000  # settings come from the head of a huge paste


@dataclass
class _Found:
    spec: ParamSpec | None
    start: int
    end: int
    candidates: list[ParamSpec] = field(default_factory=list)


class Extractor:
    def __init__(self, catalogue: Catalogue, cues: Cues, status_model: StatusModel | None = None,
                 scope_model: ScopeModel | None = None):
        self.cat = catalogue
        self.cues = cues  # the phrase book (resources/phrases/*.toml)
        self.status_model = status_model  # how statuses are read (None: by the rules alone)
        self.scope_model = scope_model  # which object a value belongs to (None: by the rules alone)
        self.scope_seen: list | None = None  # bench/train_scope.py: each reading's candidates, recorded
        self.guess = False  # offer loose values to the status model (on whenever there is one)
        vocab = {w for words in list(catalogue._phrases) + list(catalogue.engines) for w in words if w.isalpha()}
        self._vocab = vocab
        self._engine_words = {words[0] for words in catalogue.engines if len(words) == 1}
        self._deletes: dict[str, str] = {}
        for w in sorted(vocab):
            if len(w) >= 5:
                for i in range(len(w)):
                    self._deletes.setdefault(w[:i] + w[i + 1:], w)
                self._deletes.setdefault(w, w)

    # ---- typos ------------------------------------------------------------------------------------
    def _fix(self, tok: str) -> str:
        """A one-letter typo of a taxonomy word ("calmp", "smaples", "deapth", "limti") → the word."""
        if len(tok) < 5 or not tok.isalpha() or tok in self._vocab or tok in self.cues.common:
            return tok
        hit = None
        for i in range(len(tok)):  # one letter too many
            cand = tok[:i] + tok[i + 1:]
            if cand in self._vocab:
                hit = cand
                break
        if hit is None:
            hit = self._deletes.get(tok)  # one letter missing
            hit = hit if hit is not None and hit != tok else None
        if hit is None:
            for i in range(len(tok) - 1):  # two letters swapped
                swapped = tok[:i] + tok[i + 1] + tok[i] + tok[i + 2:]
                if swapped in self._vocab:
                    hit = swapped
                    break
        if hit is None:
            for i in range(len(tok)):  # one letter wrong
                cand = self._deletes.get(tok[:i] + tok[i + 1:])
                if cand is not None and len(cand) == len(tok) and sum(a != b for a, b in zip(cand, tok)) == 1:
                    hit = cand
                    break
        return hit if hit is not None and hit[0] == tok[0] else tok

    # ---- the message ------------------------------------------------------------------------------
    def extract(self, text: str, role: str, ctx: Context = Context()) -> tuple[list[Mention], Context]:
        text = _layout(compared(text[:MAX_TEXT], role))  # a table comparing values: only what is new for the writer
        out: list[Mention] = []
        engine_ctx = ctx.engine
        mentioned: dict[tuple[str, str], ParamSpec] = {}  # given a value so far in this message, in order
        named: dict[tuple[str, str], ParamSpec] = {}  # named so far in this message, with a value or not
        here_so_far: tuple[ParamSpec, ...] = ()  # named in order, then guessed (rebuilt when either grows)
        said_in: dict[int, int] = {}  # id(mention) → the sentence it was said in
        past: set[int] = set()  # the sentences told in the past tense ("out-of-core was off")
        before: list[str] = []  # the previous sentence's words
        sentences = _sentences(self.cues, text)
        said = [Sentence(x, self.cat) for x in sentences]  # tokens and names, worked out once if needed
        guesses: list[Mention] = []
        for n_sentence, sentence in enumerate(sentences):
            toks = [self._fix(t) for t, _ in P.tokens(sentence)]
            if not toks:
                continue
            toks = self._shared_word(self._under_heading(toks, engine_ctx), engine_ctx)
            found = self.cat.find(toks)
            engines = [w for start, _, w in found if isinstance(w, str)
                       and not self.cues.compared & set(toks[max(0, start - 3):start])  # "to match the Redshift look"
                       and not (toks[start - 1:start] == ["from"] and self.cues.left_from & set(toks[max(0, start - 3):start]))]
            if engines:
                engine_ctx = engines[-1]
            if engine_ctx and any(not isinstance(w, str) and self._resolve(w, engine_ctx) is None for _, _, w in found):
                found = self.cat.find(toks, engine_ctx)  # "kernel pt, samples 1024" in Octane
            status = _status(self.cues, sentence, toks, role)
            # "…, back to 25"; "Set it to 8."; "It's at 2." (what the model just asked about)
            here = {s.ident for s in here_so_far}
            running = replace(ctx, last=tuple(s for s in ctx.last if s not in ctx.asked and s.ident not in here)
                              + tuple(s for s in ctx.asked if s.ident not in here) + here_so_far)
            got = self._sentence(sentence, toks, found, role, status, engine_ctx, running, bool(engines), before,
                                 here_so_far)
            before = toks
            grew = False
            for _, _, what in found:
                spec = self._resolve(what, engine_ctx) if not isinstance(what, str) else None
                if spec is not None and spec.ident not in named:
                    named[spec.ident] = spec
                    grew = True
            for m in got:
                spec = self.cat.specs.get((m.engine, m.parameter))
                if spec is not None and spec.ident not in mentioned:
                    mentioned[spec.ident] = spec
                    grew = True
            if grew:
                here_so_far = tuple(named.values()) + tuple(s for k, s in mentioned.items() if k not in named)
            got = [replace(m, sentence=n_sentence,  # (a proposal taken by "done" keeps the object it was offered for)
                           scope=self._scope(m, said[n_sentence], ctx.objects) or (m.scope if m.confirmed else ""))
                   for m in got]
            if self.guess or self.status_model is not None:
                guesses += self._guesses(toks, found, got, engine_ctx, running, status, n_sentence)
            out.extend(got)
            said_in.update((id(m), n_sentence) for m in got)
            if {"was", "were"} & set(toks):
                past.add(n_sentence)
        out = _dedupe(_with_rejections(_replaced(out, said_in, past)))
        turned = {(m.engine, m.parameter, repr(m.value)) for m in out if m.status == REJECTED}
        out = [m for m in out if not (m.before and (m.engine, m.parameter, repr(m.value)) in turned)]  # "25 was too noisy, now 10"
        if any(m.before for m in out) and complains(self.cues, text):  # "too blue, so I changed it from 7500K to 6000K"
            out = [replace(m, status=REJECTED) if m.before else m for m in out]
        out += guesses
        if self.status_model is not None:
            out = read_status(self.status_model, out, said, role, ctx, self.cat)
        proposals = tuple(m for m in out if m.status == PROPOSED and not m.candidate)
        applied = tuple(m for m in out if m.status == APPLIED and not m.candidate)
        new_ctx = Context(
            engine=engine_ctx,
            last=(tuple(s for s in ctx.last if s.ident not in mentioned) + tuple(mentioned.values()))[-6:],
            proposals=proposals if proposals else (() if role == "user" and out else ctx.proposals),
            applied=applied or ctx.applied,
            # named without a value in a question, by either side ("what's your max samples?"): a bare
            # value next answers it, not the parameter talked about before
            asked=tuple(s for k, s in named.items() if k not in mentioned)[-3:] if "?" in text else (),
            objects=_known(ctx.objects, out),
        )
        return out, new_ctx

    def _sentence(self, sentence, toks, found, role, status, engine_ctx, ctx, names_engine,
                  before: list[str] = (), earlier: tuple[ParamSpec, ...] = ()) -> list[Mention]:
        params = [(s, e, w) for s, e, w in found if not isinstance(w, str)]
        starts = {s: e for s, e, _ in params}  # where each name starts → where it ends
        used: set[int] = {i for s, e, _ in found for i in range(s, e)}
        out: list[Mention] = []
        low = " " + " ".join(toks) + " "
        for start, end, specs in params:
            spec = self._resolve(specs, engine_ctx)
            if spec is None:
                continue
            spec = self._in_context(spec, toks, start, before, ctx.last)
            said_which = {"min", "max", "minimum", "maximum"} & set(toks[start:end])
            pairs = [] if said_which else self._min_max_after(spec, toks, end, used, status)
            if pairs:  # "unified samples 32 min, 1024 max"
                out += pairs
                continue
            taken = set(used)
            arrow: list[tuple] = []  # the value before "->", if the value was read after one
            got = self._value(spec, toks, start, end, used, starts, arrow)
            if got is None and role != "assistant" and status != REJECTED:
                took = _took_by_name(self.cues, spec, toks, start, end, ctx.proposals)  # "done on the max samples"
                if took is not None:
                    out.append(took)
                    continue
            if got is None and spec.kind == "bool" and role != "assistant":
                own = self._with_switch(spec, toks, end, used, status)  # "adaptive 0.03 256": on, with its values
                if own:
                    out += [_mention(spec, True, "", status), *own]
                    continue
            if got is None:
                bare = self.cat.bare_value(toks, start, engine_ctx)
                if bare is not None and bare[2] == end - start:  # "bf / lc": a GI engine, not "lc subdivs"
                    used.difference_update(range(start, end))
                continue
            value, unit, restore = got
            if arrow and status == PROPOSED and role != "assistant":
                out.append(_mention(spec, arrow[0][0], arrow[0][1], APPLIED))  # "thinking volume bounces 2 -> 0"
                arrow.clear()
            if spec.kind == "bool" and value is True and role != "assistant":
                out += self._with_switch(spec, toks, max(used - taken, default=end - 1) + 1, used, status)
            at = min(used - taken) if used - taken else start
            st = status
            if spec.kind == "enum":  # "kernel to PT, DL was too slow": the words after DL are about DL
                view = toks[:self._next_enum(spec, toks, max(used - taken, default=end - 1) + 1)]
            else:
                view = toks
            if status == PROPOSED and role == "user" and _states(self.cues, toks, start, end, at):
                st = APPLIED  # "max samples is 16000?? i didnt change it": the state, asked about
            later: list[Mention] = []
            if status == PROPOSED and used - taken:  # "drop the clamp to 2 or 4": both are proposals
                earlier, after = self._alternatives(spec, toks, used, at, max(used - taken) + 1)
                out += [_mention(spec, v, u, PROPOSED) for v, u in earlier]
                later = [_mention(spec, v, u, PROPOSED) for v, u in after]
            if restore:
                st = APPLIED if role != "assistant" else PROPOSED
                if st == APPLIED:
                    out.append(replace(_mention(spec, value, unit, st), restore=True))
                    out += self._sibling(spec, toks, used, st)
                    continue
            elif status == REJECTED and not _cue_after(self.cues, view, at, self.cues.reject_value_cues) \
                    and not _turned_down(self.cues, view, max(used - taken, default=at)):
                st = APPLIED if not _has(low, self.cues.proposal) else PROPOSED
            elif status == APPLIED and role != "assistant" and (
                    _cue_after(self.cues, view, at, self.cues.reject_value_cues) or _turned_down(self.cues, view, max(used - taken, default=at))
                    or ("tried" in toks[max(0, start - 4):min(start, at)]  # "I tried the AI denoiser and it … mushy"
                        and any(t in self.cues.down_words for t in toks[at:]))):
                st = REJECTED  # "so no f/4", "the 15 was worse", "caustic blur 0.1 too soft"
                known = spec in ctx.last or any((m.engine, m.parameter) == spec.ident
                                                for m in ctx.proposals + ctx.applied)
                if not known and not {"tried", "tested", "was", "were", "try", "testing"} & set(toks) \
                        and not _cue_after(self.cues, toks, at, self.cues.reject_value_cues):
                    st = APPLIED  # "SSS samples are on 2 and the knuckles look blotchy": the state, with its problem
            if spec.kind in ("text", "resolution") and role != "assistant":  # "1/125 instead of 1/50"
                later = self._refused(spec, toks, used) + later
            if arrow and st == APPLIED and role != "assistant" and not P.same_value(arrow[0][0], value):
                # "raised max samples from 2000 to 4000": 2000 was in use until now (LABELLING.md)
                out.append(replace(_mention(spec, arrow[0][0], arrow[0][1], APPLIED), before=True))
            out.append(_mention(spec, value, unit, st))
            out += later
            out += self._sibling(spec, toks, used, st)
        kelvin = next((s.key for s in reversed(ctx.last) if s.unit == "K"), "") if not self.cues.light_words & set(toks) else ""
        out += self._self_describing(toks, used, status, engine_ctx, kelvin == "white_balance",
                                     said=[m.parameter for m in out])
        if "both" in toks and role != "assistant":
            out += self._both(toks, engine_ctx, status, [m.parameter for m in out])
        here = [s for s in (self._resolve(specs, engine_ctx) for _, _, specs in params) if s is not None]
        if role != "assistant":
            out += self._contextual(sentence, toks, low, used, status, ctx, engine_ctx, here, stated=bool(out),
                                    earlier=earlier)
        elif not here:  # the model's "then try 10": a proposal for what was just discussed
            out += [replace(m, status=PROPOSED) for m in self._contextual(sentence, toks, low, used, PROPOSED,
                                                                          replace(ctx, proposals=()), engine_ctx, here)
                    if m.status != REJECTED]
        if names_engine and engine_ctx:
            out += self._candidates(toks, found, used, status, engine_ctx)
        return out

    def _scope(self, m: Mention, said: Sentence, objects: tuple[str, ...] = ()) -> str:
        """The named light, camera, output or object the value belongs to ("" render-wide); ``objects``:
        the ones the conversation named before, found again in the value's clause."""
        spec = self.cat.specs.get((m.engine, m.parameter))
        if spec is None or m.candidate:
            return ""
        if not (spec.key in OBJECT_KEYS or objects or self.cues.for_named_re.search(said.text)):
            return ""  # a render setting said with no "on/for the … frames|layer": render-wide
        toks: list[str] = []
        end = 0
        for tok, at in said.toks:  # the words, with the clause marks the tokens leave out
            if re.search(r"[,;—–(]|\s-\s", said.text[end:at]):
                toks.append(",")
            toks.append(tok)
            end = at + len(tok)
        where = locate(m, said, self.cat)
        if where < 0 and m.value is not None and not isinstance(m.value, bool):
            return ""
        at = -1 if where < 0 else _nth_word(toks, where)
        names = [(_nth_word(toks, s), _nth_word(toks, e - 1) + 1) for s, e in said.names(spec.ident)]
        rule = scope_of(spec, toks, at, names) \
            if spec.key in OBJECT_KEYS or self.cues.for_named_re.search(said.text) else ""
        known = known_object(toks, at, objects)
        if self.scope_model is None and self.scope_seen is None:
            return rule or known
        options = scope_candidates(spec.key, spec.kind == "bool", toks, at, names, objects, rule, known)
        if self.scope_seen is not None:  # (bench/train_scope.py: what it learns from)
            self.scope_seen.append((m, options, rule or known))
        return self.scope_model.choose(options, rule or known) if self.scope_model is not None else rule or known

    def _guesses(self, toks: list[str], found, got: list[Mention], engine: str, ctx: Context, status: str,
                 n_sentence: int) -> list[Mention]:
        """Numbers in a sentence that the rules read as nothing, each with the parameter it most likely
        belongs to — one named before it in the sentence, else one read in the sentence, else one
        talked about just before — for the status model to judge ("2400 tried, still a tiny bit. went
        3200": 2400 is the max samples' too). Never times, frames, versions or sizes."""
        out: list[Mention] = []
        named = [(s, self._resolve(w, engine)) for s, _, w in found if not isinstance(w, str)]
        named = [(s, spec) for s, spec in named if spec is not None and spec.kind in ("int", "number")]
        read = [self.cat.specs.get((m.engine, m.parameter)) for m in got]
        read = [spec for spec in read if spec is not None and spec.kind in ("int", "number")]
        values = [m.value for m in got if isinstance(m.value, (int, float)) and not isinstance(m.value, bool)]
        for i, tok in enumerate(toks):
            num = P.parse_number(tok)
            if num is None or _not_a_value(self.cues, toks, i) or (i > 0 and toks[i - 1] in ("f", "x", "#")):
                continue
            if any(P.same_value(num.value, v) for v in values) or any(t in self._engine_words for t in toks[i - 1:i]):
                continue
            if not named and self._other_subject(toks, i, set()):
                continue  # "Density back to 2.2": something the catalogue does not know
            choices = [("named", spec) for s, spec in sorted(named, key=lambda p: (p[0] > i, abs(i - p[0])))]
            choices += [("sentence", spec) for spec in read]
            if not any(not isinstance(w, str) for _, _, w in found):  # a sentence naming no parameter at all
                choices += [("context", spec) for spec in reversed(ctx.last[-3:])]
            for how, spec in choices:
                got_value = P.number_for(spec, num) if spec.kind in ("int", "number") else None
                if got_value is not None:
                    out.append(replace(_mention(spec, got_value[0], got_value[1], status), sentence=n_sentence,
                                       guessed=how))
                    break
        return out

    def _under_heading(self, toks: list[str], engine: str) -> list[str]:
        """A pasted line of a settings panel: "Ray depth: diffuse 1 / specular 1", "Clamping: Direct 0,
        Indirect 10", "Light paths: Total 12, Diffuse 4". The heading names what the short words
        after it are: they are read as "diffuse depth 1", "clamp direct 0", "total bounces 12"."""
        if ":" not in toks[:4] or not engine:
            return toks
        k = toks.index(":")
        heading = toks[:k]
        if not heading or not all(t.isalpha() for t in heading):
            return toks
        if self.cat._phrases.get(tuple(heading)) and not self.cues.headings.keys() & set(heading):
            return toks  # "Max samples: 2048" names a parameter, not a panel
        kinds = [w for t in heading for w in self.cues.headings.get(t, ())]
        if not kinds:
            return toks
        out = toks[:k + 1]
        for i in range(k + 1, len(toks)):
            tok = toks[i]
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            if tok.isalpha() and (P.parse_number(nxt) is not None or P.bool_word(nxt) is not None or nxt == ":") \
                    and (not out[-1].isalpha() or P.bool_word(out[-1]) is not None):
                for kind in kinds:
                    hit = next((words for words in ((tok, *kind.split()), (*kind.split(), tok))
                                if self._resolve(list(self.cat._phrases.get(words, ())), engine) is not None
                                and any(s.engine == engine for s in self.cat._phrases.get(words, ()))), None)
                    if hit:
                        out.extend(hit)
                        break
                else:
                    out.append(tok)
            else:
                out.append(tok)
        return out

    def _shared_word(self, toks: list[str], engine: str) -> list[str]:
        """A list whose later entries leave out the word the first one carries, or that a heading
        gives: "diffuse limit 2, reflection 2, refraction 2", "ray depths are diffuse 1, specular 2
        and transmission 4". Those entries are read with the word ("reflection limit 2")."""
        if not engine:
            return toks
        out: list[str] = []
        kind: tuple[str, ...] = ()
        for i, tok in enumerate(toks):
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            if kind and tok.isalpha() and out and (out[-1] in self.cues.list_separators or out[-1] in ("are", "is", ":")
                                                   or P.parse_number(out[-1]) is not None) \
                    and P.parse_number(nxt) is not None:  # (commas are not tokens: an entry follows a value)
                hit = next((words for k in kind for words in ((tok, *k.split()), (*k.split(), tok))
                            if any(s.engine == engine for s in self.cat._phrases.get(words, ()))), None)
                if hit:
                    out.extend(hit)
                    continue
            out.append(tok)
            if tok in self.cues.headings and (P.parse_number(nxt) is not None or nxt in ("are", "is", ":", "at")):
                kind = self.cues.headings[tok]
            elif not kind and tok.isalpha() and P.parse_number(nxt) is not None:
                alone = [s for s in self.cat._phrases.get((tok,), ()) if s.engine == engine]
                if len(alone) == 1 and alone[0].key.split("_")[-1] in self.cues.headings:  # "refraction 2, diffuse 2"
                    kind = self.cues.headings[alone[0].key.split("_")[-1]]
        return out

    def _in_context(self, spec: ParamSpec, toks: list[str], start: int, before: list[str] = (),
                    last: tuple[ParamSpec, ...] = ()) -> ParamSpec:
        """"intensity" after "HDRI" in the same sentence, or in the sentence before when this one names
        no light ("added a studio hdri. intensity 1.5, rotation 90"), is the HDRI's intensity."""
        words = self.cues.hdri_words
        for (engine, key), other in _BY_CONTEXT.items():
            if spec.ident != (engine, key):
                continue
            here = toks[max(0, start - 12):start]
            hdri = max((k for k, t in enumerate(here) if t in words), default=-1)
            light = max((k for k, t in enumerate(here) if t in self.cues.light_words), default=-1)
            talked = next((s.key for s in reversed(last) if s.engine == ANY and s.key.startswith(("hdri", "light"))), "")
            if hdri > light or (hdri < 0 and not self.cues.light_words & set(toks) and (
                    any(t in words for t in before) or talked.startswith("hdri"))):
                return self.cat.specs.get((engine, other), spec)  # "dome at intensity 0.9, … key at intensity 30"
        return spec

    def _resolve(self, specs: list[ParamSpec], engine: str) -> ParamSpec | None:
        if engine:  # the engine being talked about decides; another engine's word means nothing here
            specs = [s for s in specs if s.engine in (engine, ANY)]
        if len(specs) == 1:
            return specs[0]
        for s in specs:
            if s.engine == engine:
                return s
        anys = [s for s in specs if s.engine == ANY]
        if anys:
            return anys[0]
        return None  # the same words in several engines and no engine in sight

    # ---- values -----------------------------------------------------------------------------------
    def _value(self, spec: ParamSpec, toks: list[str], start: int, end: int, used: set[int],
               starts: dict[int, int] | None = None, arrow: list | None = None):
        """(value, unit, restore) for the parameter at toks[start:end], consuming the value's tokens:
        a switch's state, a choice, else a value with the parameter's unit just before its name ("a 35mm
        lens"), the nearest value after the name, or one just before it ("1024 samples")."""
        starts = starts or {}
        if spec.kind == "bool":
            return self._bool(spec, toks, start, end, used)
        if spec.kind == "enum":
            return self._choice(spec, toks, start, end, used, starts, arrow)
        return (self._with_unit_before(spec, toks, start, used)
                or self._after_name(spec, toks, start, end, used, starts, arrow)
                or self._before_name(spec, toks, start, used))

    def _choice(self, spec: ParamSpec, toks: list[str], start: int, end: int, used: set[int], starts: dict[int, int],
                arrow: list | None):
        """The value of a choice ("kernel: path tracing", "no denoiser", "brute force for primary gi")."""
        n = len(toks)
        if start > 0 and toks[start - 1] == "no" and "none" in spec.values and start - 1 not in used:
            used.add(start - 1)  # "no denoiser", "still no denoise" ("without denoising at 2%" is a test)
            return "none", "", False
        for i in range(max(0, start - 3), start):  # "ai denoiser": the value holds the parameter's name
            hit = self.cat.enum_value(spec, toks, i)
            if hit and i + hit[1] == end and not used & set(range(i, start)):
                used.update(range(i, end))
                off = _has(" " + " ".join(toks[max(0, i - 3):i]) + " ", self.cues.off_verbs | {"killing"}) \
                    or "off" in toks[end:]  # "killing the ai denoiser", "tried the AI denoiser … so it's off"
                if off:
                    return ("none", "", False) if "none" in spec.values else None
                return hit[0], "", False
        before = next(((i, hit) for i in range(max(0, start - 4), start)
                       if (hit := self.cat.enum_value(spec, toks[:start], i)) and i + hit[1] == start), None)
        for i in range(end, min(n, end + 6)):  # "kernel: path tracing", "primary gi engine to brute force"
            if self._in_engine(toks, i):
                continue
            hit = self.cat.enum_value(spec, toks, i)
            if i in used and not (hit and (toks[i] in self._engine_words or toks[i - 1] == "from")):
                break  # (but "denoiser at Octane AI", "convergence mode from path traced to variance")
            if hit and before and i + hit[1] in starts and not used & set(range(before[0], start)):
                # "brute force primary, light cache secondary" ("primary BF, secondary none" is not that)
                used.update(range(before[0], start))
                return before[1][0], "", False
            if hit and i > 0 and toks[i - 1] == "from":  # "switched the kernel from path tracing to PMC"
                j = i + hit[1]
                later = self.cat.enum_value(spec, toks, j + 1) if toks[j:j + 1] == ["to"] else None
                if later:
                    used.update(range(i, j + 1 + later[1]))
                    if arrow is not None and later[0] != hit[0]:
                        arrow.append((hit[0], ""))  # path tracing was in use until now
                    return later[0], "", False
            if hit:
                used.update(range(i, i + hit[1]))
                return hit[0], "", self._restore_before(toks, i)
            if toks[i] not in self.cues.join and toks[i] != "back":  # "secondary back to light cache"
                break
        for i in range(max(0, start - 4), start):  # "brute force for primary gi", "the pt kernel"
            hit = self.cat.enum_value(spec, toks[:start], i)
            if hit and i + hit[1] <= start and all(t in self.cues.join or t in ("for", "as") for t in toks[i + hit[1]:start]):
                used.update(range(i, i + hit[1]))
                return hit[0], "", False
        return None

    def _with_unit_before(self, spec: ParamSpec, toks: list[str], start: int, used: set[int]):
        """A value with this parameter's unit just before its name ("a 35mm lens")."""
        for i in range(start - 1, max(-1, start - 3), -1):
            if i in used:
                break
            num = P.parse_number(toks[i])
            if num is not None and num.unit and num.unit in ({spec.unit.lower(), *spec.units} - {""}):
                got = self._read(spec, toks, i, used)
                if got is not None:
                    used.update(range(i, i + got[2]))
                    return got[0], got[1], False
            if toks[i] not in self.cues.before_join:
                break
        return None

    def _after_name(self, spec: ParamSpec, toks: list[str], start: int, end: int, used: set[int],
                    starts: dict[int, int], arrow: list | None):
        """The nearest value after the name, over joining words ("GI clamp is now at 10"); of "8 -> 4",
        "from 8 to 4" and "was 4, now 10" the later one (the earlier goes to ``arrow``)."""
        n = len(toks)
        i = end
        steps = 0
        prev = None
        while i < n and steps < 5:
            tok = toks[i]
            if self._in_engine(toks, i):  # "GI clamp in Octane set to 10"
                prev = tok
                i += 1
                continue
            if i in used:
                break
            got = self._read(spec, toks, i, used, name_at=i + 1 if i + 1 in starts else -1)  # "24, min subdivs 1"
            if got is not None and i + got[2] in starts and i == end and start > 0 and start - 1 not in used:
                before = self._read(spec, toks, start - 1, used, name_at=start)
                if before is not None and before[2] == 1:  # "64 pixel samples, 4 diffuse limit": 4 is the limit's
                    used.add(start - 1)
                    return before[0], before[1], False
            if got is not None:
                value, unit, width = got
                step = 2 if toks[i + width:i + width + 2] in (["and", "now"], ["then", "now"]) else 1
                if toks[i + width:i + width + 1] in (["->"], ["now"]) or step == 2:  # "8 -> 4", "was 4, now 10"
                    later = self._read(spec, toks, i + width + step, used) if i + width + step < n else None
                    if later is not None and i + width + step not in used and not _not_a_value(self.cues, toks, i + width + step):
                        used.update(range(i, i + width + step + later[2]))
                        if arrow is not None:
                            arrow.append((value, unit))  # "clamp indirect 5 -> 3?": 5 is in use
                        return later[0], later[1], False
                if toks[i + width:i + width + 1] == ["->"] and i + width + 1 < n:  # "diffuse depth 8 -> 4"
                    later = self._read(spec, toks, i + width + 1, used)
                    if later is not None and not _not_a_value(self.cues, toks, i + width + 1):  # not "3 -> 11 min"
                        used.update(range(i, i + width + 1 + later[2]))
                        if arrow is not None:
                            arrow.append((value, unit))  # "clamp indirect 5 -> 3?": 5 is in use
                        return later[0], later[1], False
                if prev == "from":  # "from 4 to 2.8", "from 8 down to 4": the value is the one after "to"
                    for j in range(i + width, min(n - 1, i + width + 3)):
                        if toks[j] == "to":
                            later = self._read(spec, toks, j + 1, used)
                            if later is not None:
                                used.update(range(i, j + 1 + later[2]))
                                if arrow is not None:
                                    arrow.append((value, unit))  # 4 was in use until now
                                return later[0], later[1], False
                            break
                used.update(range(i, i + width))
                return value, unit, self._restore_before(toks, i)
            if tok not in self.cues.join and tok not in ("the", "of", "for", "in"):
                unit_value = self._unit_value(spec, toks, i + 1, min(n, end + 6), used)
                if unit_value is not None:  # "light temperature of the practicals 2700K"
                    return unit_value
                break
            prev = tok
            i += 1
            steps += 1
        return None

    def _before_name(self, spec: ParamSpec, toks: list[str], start: int, used: set[int]):
        """A value just before the name: "1024 samples", "16 gi bounces", "2-3 gi bounces"."""
        for i in range(start - 1, max(-1, start - 4), -1):  # "1024 samples", "a 35mm lens", "16 gi bounces"
            if i in used:
                break
            if i >= 2 and toks[i - 1] in ("-", "–") and i - 2 not in used:  # "2-3 gi bounces"
                got = self._read(spec, toks, i - 2, used, name_at=start)
                if got is not None and i - 2 + got[2] == i + 1:
                    used.update(range(i - 2, i + 1))
                    return got[0], got[1], False
            got = self._read(spec, toks, i, used, name_at=start)
            if got is not None and i + got[2] <= start:
                used.update(range(i, i + got[2]))
                return got[0], got[1], False
            if toks[i] not in self.cues.before_join and toks[i] != "for" and toks[i] not in spec.units:
                break  # "went with 4k for texture resolution", "45 degrees elevation"
        return None

    def _with_switch(self, spec: ParamSpec, toks: list[str], j: int, used: set[int], status: str) -> list[Mention]:
        """Numbers said right after a switch turned on belong to its own settings: "adaptive on 0.02"
        is the adaptive threshold, "adaptive on 0.03 256" the threshold and the min samples."""
        word = spec.key.split("_")[0]
        own = [s for s in self.cat.specs.values() if s.engine == spec.engine and s != spec
               and s.key.split("_")[0] == word and s.kind in ("number", "int")]
        out: list[Mention] = []
        while j < len(toks) and j not in used and own:
            got = next(((s, g) for s in own if (g := self._read(s, toks, j, used)) is not None), None)
            if got is None or _not_a_value(self.cues, toks, j):
                break
            s, (value, unit, width) = got
            used.update(range(j, j + width))
            out.append(_mention(s, value, unit, status))
            own.remove(s)
            j += width
        return out

    def _alternatives(self, spec: ParamSpec, toks: list[str], used: set[int], lo: int, hi: int):
        """Other values offered with "or" next to the one read at toks[lo:hi] ("2 or 4", "3 or 4 SSS
        samples"): (those said before it, those said after it)."""
        before, after = [], []
        if hi + 1 < len(toks) and toks[hi] == "or" and hi + 1 not in used:
            got = self._read(spec, toks, hi + 1, used)
            if got is not None:
                used.update(range(hi, hi + 1 + got[2]))
                after.append((got[0], got[1]))
        if lo >= 2 and toks[lo - 1] == "or" and lo - 2 not in used:
            got = self._read(spec, toks, lo - 2, used)
            if got is not None and got[2] == 1:
                used.update((lo - 2, lo - 1))
                before.append((got[0], got[1]))
        return before, after

    def _unit_value(self, spec: ParamSpec, toks: list[str], start: int, stop: int, used: set[int]):
        """A value further on that carries this parameter's own unit (2700K for a temperature)."""
        accepted = {spec.unit.lower(), *spec.units} - {""}
        if not accepted or spec.kind not in ("number", "int"):
            return None
        for j in range(start, stop):
            if j in used:
                return None
            num = P.parse_number(toks[j])
            if num is not None and num.unit in accepted:
                got = self._read(spec, toks, j, used)
                if got is not None:
                    used.update(range(j, j + got[2]))
                    return got[0], got[1], False
        return None

    def _read(self, spec: ParamSpec, toks: list[str], i: int, used: set[int], name_at: int = -1):
        """A value of this parameter's kind starting at toks[i]: (value, unit, tokens used)."""
        tok = toks[i]
        n = len(toks)
        if tok.startswith("f/") and spec.key != "f_stop":
            return None  # "f/2.8" is an aperture, whatever stands next to it
        if spec.kind == "resolution":
            res = P.resolution(tok)
            return (res, spec.unit, 1) if res else None
        if spec.kind == "text":
            if re.fullmatch(r"\d{1,2}:\d{2}(?::\d{2})?", tok):  # a time limit: 8:00:00
                return tok, spec.unit, 1
            if "k" in spec.units and re.fullmatch(r"(?:1|2|4|6|8|16|32)k", tok):  # texture sizes: "4k", "8k"
                return tok, spec.unit, 1
            if re.fullmatch(r"1/\d+", tok) or P.parse_number(tok):
                unit = spec.unit
                nxt = toks[i + 1] if i + 1 < n else ""
                width = 1
                if nxt in (spec.units or ()) or (spec.unit and nxt == spec.unit.lower()):
                    width = 2
                num = P.parse_number(tok)
                if num and num.unit and num.unit not in ({spec.unit.lower(), *spec.units} - {""}):
                    if not re.fullmatch(r"1/\d+", tok):
                        return None
                text = tok if "/" in tok or not num else P.format_value(int(num.value) if num.is_int else num.value)
                return text, unit, width
            return None
        num = P.parse_number(tok)
        if num is None:
            return None
        nxt = toks[i + 1] if i + 1 < n else ""
        if not num.unit and nxt in self.cues.not_values and nxt not in spec.units and nxt != spec.unit.lower() \
                and i + 1 != name_at and not _label_before(toks, i + 1):  # "512 min samples": the parameter's own name
            return None
        if not num.unit and nxt in self.cues.other_units and nxt not in spec.units and nxt != spec.unit.lower():
            return None  # "power 150 W" is the light's power in watts, not its multiplier
        width = 1
        if not num.unit and nxt and (nxt in spec.units or nxt == spec.unit.lower() and nxt):
            num = P.Number(num.value, nxt, num.is_int)
            width = 2
        if spec.kind == "range" or nxt in ("-", "–") or (nxt in ("and", "to") and i > 0 and toks[i - 1] == "between"):
            if i + 2 < n and nxt in ("and", "to", "-", "–"):
                other = P.parse_number(toks[i + 2])
                if other is not None and (nxt != "to" or toks[i - 1] == "between"):
                    a, b = P.number_for(spec, num), P.number_for(spec, other)
                    if a and b:
                        return (a[0], b[0]), a[1], 3
        got = P.number_for(spec, num)
        if got is None:
            return None
        if i > 0 and toks[i - 1] == "between" and i + 2 < n and toks[i + 1] == "and":
            other = P.parse_number(toks[i + 2])
            b = P.number_for(spec, other) if other else None
            if b:
                return (got[0], b[0]), got[1], 3
        return got[0], got[1], width

    def _bool(self, spec: ParamSpec, toks: list[str], start: int, end: int, used: set[int]):
        before = " " + " ".join(toks[max(0, start - 4):start]) + " "
        if toks[start - 1:start] in (["no"], ["without"]) and start - 1 not in used:  # "no caustics in render"
            used.add(start - 1)
            return False, "", False
        if any(f" {phrase} " in before for phrase in self.cues.off_verbs):  # "turn off motion blur on the plates"
            return False, "", False
        if any(f" {phrase} " in before for phrase in self.cues.on_verbs):
            return True, "", False
        rest = " " + " ".join(toks[end:]) + " "
        for phrase, value in self.cues.it_on_off:  # "adaptive sampling was off, turned it on"
            if phrase in rest:
                return value, "", False
        for i in range(end, min(len(toks), end + 5)):  # "adaptive sampling on", "motion blur: off", "was already on"
            if self._in_engine(toks, i):
                continue
            if i in used:
                break
            b = P.bool_word(toks[i])
            if toks[i] == "on" and toks[i + 1:i + 2] and toks[i + 1] in self.cues.determiners:
                break  # "depth of field on the dial": a place, not a switch
            if b is not None and toks[i] not in ("no", "none"):
                used.add(i)
                for k in range(i + 1, min(len(toks), i + 4)):  # "was off, on now", "off before, now on"
                    later = P.bool_word(toks[k])
                    if later is not None and later != b and toks[k] not in ("no", "none") and k not in used \
                            and "now" in toks[k - 1:k + 2]:
                        used.add(k)
                        return later, "", False
                return b, "", False
            if toks[i] not in self.cues.join and toks[i] not in ("was", "been", "leave", "turn", "switch", "put", "switched"):
                break
        for phrase in self.cues.off_loose:
            if f" {phrase} " in before:
                return False, "", False
        for phrase in self.cues.on_loose:
            if f" {phrase} " in before:
                return True, "", False
        return None

    def _min_max_after(self, spec: ParamSpec, toks: list[str], end: int, used: set[int], status: str) -> list[Mention]:
        words = spec.key.split("_")
        if "min" not in words and "max" not in words:
            return []
        out = []
        j = end
        while j < len(toks) and toks[j] in ("is", "are", "at", "=", ":", "'s", "now", "set", "to"):
            j += 1
        k = j + 2 if toks[j + 1:j + 2] in (["to"], ["-"], ["–"]) else j + 1
        lo_spec = self.cat.specs.get((spec.engine, "_".join("min" if w == "max" else w for w in words)))
        hi_spec = self.cat.specs.get((spec.engine, "_".join("max" if w == "min" else w for w in words)))
        if k < len(toks) and lo_spec and hi_spec and not used & {j, k} and toks[j - 1:j] != ["between"]:
            lo, hi = self._read(lo_spec, toks, j, used), self._read(hi_spec, toks, k, used)
            if lo and hi and lo[0] < hi[0] and toks[k + 1:k + 2] not in (["min"], ["max"], ["minimum"], ["maximum"]):
                used.update(range(j, k + 1))  # "unified samples 16 to 512", "unified 32/512"
                return [_mention(lo_spec, lo[0], lo[1], status), _mention(hi_spec, hi[0], hi[1], status)]
        for _ in range(2):  # "unified samples is min 4 max 32"
            if j + 1 < len(toks) and toks[j] in ("min", "max", "minimum", "maximum") and j + 1 not in used:
                key = "_".join(toks[j][:3] if w in ("min", "max") else w for w in words)
                sib = self.cat.specs.get((spec.engine, key))
                got = self._read(sib, toks, j + 1, used) if sib else None
                if got is None:
                    break
                used.update(range(j, j + 1 + got[2]))
                out.append(_mention(sib, got[0], got[1], status))
                j += 1 + got[2]
                while j < len(toks) and toks[j] in ("and", ",", "/"):
                    j += 1
        if out:
            return out
        for j in range(end, min(len(toks) - 1, end + 8)):
            if j in used or toks[j + 1] not in ("min", "max", "minimum", "maximum") \
                    or (j + 2 < len(toks) and toks[j + 2] in words) \
                    or _label_before(toks, j + 1) or _minutes(self.cues, toks, j):  # "max subdivs is 24, min subdivs 1"
                continue
            which = toks[j + 1][:3]
            key = "_".join(which if w in ("min", "max") else w for w in words)
            sib = self.cat.specs.get((spec.engine, key))
            got = self._read(sib, toks, j, used, name_at=j + 1) if sib else None
            if got is not None:
                used.update(range(j, j + 2))
                out.append(_mention(sib, got[0], got[1], status))
        return out

    def _both(self, toks: list[str], engine: str, status: str, said: list[str]) -> list[Mention]:
        """"turned off both caustics", "the caustics i turn off both": the switches of this engine
        whose names share the word, all set the same way."""
        low = " " + " ".join(toks) + " "
        on, off = _has(low, self.cues.on_verbs), _has(low, self.cues.off_verbs)
        if on == off:  # no verb, or both: the plain word next to "both" ("both off", "turn off both")
            near = {t for k, t in enumerate(toks) if "both" in toks[max(0, k - 2):k + 3]}
            on, off = "on" in near, "off" in near
        value = True if on and not off else False if off and not on else None
        if value is None or not engine:
            return []
        for tok in set(toks):
            if len(tok) < 4 or not tok.isalpha():
                continue
            stem = tok.rstrip("s")
            specs = [sp for sp in self.cat.specs.values() if sp.engine == engine and sp.kind == "bool"
                     and stem in {w.rstrip("s") for w in sp.name.lower().split()}]
            if len(specs) == 2 and not any(sp.key in said for sp in specs):
                return [_mention(sp, value, "", APPLIED if status == REJECTED else status) for sp in specs]
        return []

    def _sibling(self, spec: ParamSpec, toks: list[str], used: set[int], status: str) -> list[Mention]:
        """"unified sampling min 16, max 512": the bare "max" is the sibling of the min just named."""
        out = []
        for word, other in (("max", "min"), ("min", "max")):
            if other not in spec.key.split("_"):
                continue
            sib = self.cat.specs.get((spec.engine, "_".join(word if w == other else w for w in spec.key.split("_"))))
            if sib is None:
                continue
            for i, tok in enumerate(toks[:-1]):
                if tok in (word, word + "imum") and i not in used and i + 1 not in used:
                    got = self._read(sib, toks, i + 1, used)
                    if got is not None:
                        used.update(range(i, i + 1 + got[2]))
                        out.append(_mention(sib, got[0], got[1], status))
        return out


    def _self_describing(self, toks: list[str], used: set[int], status: str, engine: str = "",
                         balance: bool = False, said: list[str] = ()) -> list[Mention]:
        """Values that say what they are without a name: "f/2.8" (an aperture), "1920x1080" (a resolution)."""
        out = []
        said_keys = tuple(said)  # ("said" is reused below for whether a value was said)
        balance = (balance or "balance" in toks or "wb" in toks) and "white_balance" not in said and not any(  # a kelvin value there is the white balance,
            i in used and (P.parse_number(t) or P.Number(0, "", True)).unit == "k" for i, t in enumerate(toks))  # once
        enum_end, enum_spec = -1, None  # the last enum value read: "irradiance map + light cache", "bf / lc"
        for i, tok in enumerate(toks):
            if i in used:
                continue
            enum = self.cat.bare_value(toks, i, engine)
            if enum is not None:
                spec, value, width, shared = enum
                j = i
                while j > 0 and toks[j - 1] in ("the", "a", "an"):
                    j -= 1
                before = " " + " ".join(toks[max(0, j - 3):j])  # the cue must end right before the value
                after = tuple(toks[i + width:i + width + 2])
                chained = enum_end >= 0 and all(t in ("and", "plus", "with", "for", "secondary") for t in toks[enum_end:i])
                if chained and spec == enum_spec and shared:  # "GI BF+BF": the second is the other one's
                    spec = self._sharing(spec, value) or spec
                chained = chained and spec != enum_spec  # "irradiance map + light cache", never "OIDN, OptiX"
                nxt_enum = self.cat.bare_value(toks, i + width, engine) if shared else None
                paired = nxt_enum is not None and nxt_enum[0].key.split("_")[-1] == spec.key.split("_")[-1] \
                    and status != PROPOSED  # "BF + LC", "done, brute force + light cache": a pair said as one
                chained = chained or toks[j - 1:j] == ["and"] and _has(" " + " ".join(toks[:j]) + " ", self.cues.setting_verbs)
                back = status != PROPOSED and any(before.endswith(f" {r}") for r in self.cues.restore)
                cued = any(before.endswith(f" {c}") for c in (self.cues.shared_enum_cues if shared else self.cues.enum_cues))
                if shared and spec.key not in said_keys:  # the parameter this sentence named: "primary GI to BF, IC was …"
                    other = self._sharing(spec, value)
                    spec = other if other is not None and other.key in said_keys else spec
                refused = status != PROPOSED and spec.key in said_keys and (
                    before.endswith((" instead of", " than")) or _turned_down(self.cues, toks, i + width - 1))
                if refused:  # "kernel to PT, DL was too slow", "denoiser OptiX instead of OIDN"
                    used.update(range(i, i + width))
                    out.append(_mention(spec, value, "", REJECTED))
                    continue
                if shared:  # a value two parameters share needs a plain cue: "GI is bf + lc", "keeping brute force"
                    said = chained or cued or back or paired
                else:
                    said = chained or cued or after in self.cues.enum_after or after[:1] in (("it's",), ("on",)) \
                        or toks[j - 1:j] == ["went"] or (j > 0 and j - 1 in used and P.parse_number(toks[j - 1]) is not None
                                                          and status != PROPOSED) \
                        or (after[:1] == ("mode",) and toks[j - 1:j] not in (["in"], ["the"])) \
                        or (i == 0 and (len(toks) <= width + 2  # "path tracing, 3000 samples, …": a list of settings
                                        or P.parse_number(toks[i + width]) is not None))
                if said:
                    used.update(range(i, i + width))
                    enum_end, enum_spec = i + width, spec
                    kept = any(before.endswith(f" {c}") for c in ("keeping", "keep", "staying on", "stick with",
                                                                  "sticking with"))
                    st = APPLIED if (kept or back) and status == REJECTED else status
                    out.append(replace(_mention(spec, value, "", st), restore=back))
                    continue
            named_res = self.cues.named_resolutions.get((tok, toks[i + 1] if i + 1 < len(toks) else "")) \
                or self.cues.named_resolutions.get((tok, ""))
            res_spec = self.cat.specs.get((ANY, "resolution"))
            if named_res and res_spec is not None:  # "4K DCI", "1080p"
                used.add(i)
                out.append(_mention(res_spec, named_res, res_spec.unit, status))
                continue
            num = P.parse_number(tok)
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            if num is not None and "->" in toks[i + 1:i + 3]:
                continue  # "6500 K -> 5500 K": the value it was
            unit = num.unit if num and num.unit else (nxt if num and nxt in ("ev", "fps", "mm", "k", "w") else "")
            unit = "w" if unit in ("watt", "watts") or (num and not unit and nxt in ("watt", "watts")) else unit
            if num is not None and (num.unit or nxt) in self.cues.degrees and (
                    self.cues.hdri_words & set(toks) or self.cues.rotation_words & set(toks) and not self.cues.light_words & set(toks)):
                unit = "°"  # "the dome's rotated 45 degrees", "hdri at 172 deg"
            near = set(toks[max(0, i - 5):i])
            kelvin_for = "white_balance" if near & self.cues.camera_words else "light_temperature" if near & self.cues.light_words else None
            key = ("f_stop" if tok.startswith("f/") else "resolution" if P.resolution(tok)
                   else "shutter_speed" if _SHUTTER.fullmatch(tok) and nxt not in self.cues.not_shutter
                   and (i == 0 or toks[i - 1] not in ("the", "of") or toks[i - 2:i] == ["instead", "of"])
                   else (kelvin_for or ("white_balance" if balance else "light_temperature")) if unit == "k"
                   else {"mm": "focal_length", "ev": "exposure", "fps": "frame_rate", "°": "hdri_rotation",
                         "w": "light_power"}.get(unit))
            if key == "focal_length" and (not 4 <= num.value <= 2400 or nxt in self.cues.size_after
                                          or toks[i + 1:i + 2] == ["mm"] and toks[i + 2:i + 3] and toks[i + 2] in self.cues.size_after):
                key = None  # "the crystal is 1.2mm thick", "12 mm thick glass": a size, not a lens
            if key is None and i > 0 and toks[i - 1] == "@" and num and 10 <= num.value <= 120 \
                    and P.resolution(toks[i - 2] if i > 1 else ""):
                key = "frame_rate"  # "4096x2160 @ 23.976"
            if key is None and num and num.unit == "%" and 1 <= num.value <= 1000 and (
                    i > 1 and toks[i - 1] in ("at", "@") and P.resolution(toks[i - 2])  # "2048x858 at 100%"
                    or toks[i + 1:i + 2] in (["res"], ["resolution"])):  # "render at 100% resolution"
                key = "resolution_percentage"
            if key is None and engine and re.fullmatch(r"\d{1,3}:\d{2}:\d{2}", tok) and "limit" in toks[i - 3:i + 3] \
                    and (engine, "time_limit") in self.cat.specs:  # "rerendering with a 2:00:00 limit"
                spec = self.cat.specs[(engine, "time_limit")]
                used.add(i)
                out.append(_mention(spec, tok, spec.unit, status))
                continue
            spec = self.cat.specs.get((ANY, key)) if key else None
            got = self._read(spec, toks, i, used) if spec else None
            if got is not None:
                used.add(i)
                said_no = status == APPLIED and (i > 0 and toks[i - 1] in ("no", "not")  # "so no f/4"
                                                 or _turned_down(self.cues, toks, i)  # "f/5.6 made the background too busy"
                                                 or _has(" " + " ".join(toks[max(0, i - 3):i]) + " ",
                                                         ("than", "instead of")))  # "4300 K rather than 5600"
                st = REJECTED if said_no else status
                back = status != PROPOSED and self._restore_before(toks, i) \
                    and not self.cues.plan_re.search(" ".join(toks))  # "put the camera back to 6500K", not "we'll go back to"
                if st == REJECTED and not said_no and not _cue_after(self.cues, toks, i, self.cues.reject_value_cues) \
                        and not _turned_down(self.cues, toks, i) and (back or _has(" " + " ".join(toks[max(0, i - 5):i]) + " ", self.cues.setting_verbs)):
                    st = APPLIED  # "the white balance is back to 5200K and I set the key to 4500K"
                out.append(replace(_mention(spec, got[0], got[1], st), restore=back and st == APPLIED))
        return out

    def _refused(self, spec: ParamSpec, toks: list[str], used: set[int]) -> list[Mention]:
        """Another value of a text or resolution setting, turned down in the same sentence ("time
        limit 1:30:00 instead of 0:45:00", "to 1920x1080, 3840x2160 was too slow"). Numbers are the
        contextual reader's."""
        out = []
        for k in range(max(used, default=-1) + 1, len(toks)):
            if k in used or not _OTHER_VALUE.fullmatch(toks[k]) and not re.fullmatch(r"\d{1,2}k", toks[k]):
                continue
            got = self._read(spec, toks, k, used)
            if got is not None and (toks[k - 2:k] == ["instead", "of"] or toks[k - 1:k] == ["than"]
                                    or _turned_down(self.cues, toks, k)):
                used.update(range(k, k + got[2]))
                out.append(_mention(spec, got[0], got[1], REJECTED))
        return out

    def _other_subject(self, toks: list[str], i: int, used: set[int]) -> bool:
        """The sentence opens with a word naming something the catalogue does not know, right before
        the cue of the bare value at toks[i] ("Density back to 2.2", "roughness to 0.3 then"): the
        value is that thing's, not the parameter talked about last."""
        if i < 2 or toks[1:i] not in (["back", "to"], ["to"], ["goes", "back", "to"], ["went", "back", "to"]) or 0 in used:
            return False
        tok = toks[0]
        return tok.isalpha() and len(tok) > 3 and tok not in self._vocab and tok not in self.cues.subject_words

    def _in_engine(self, toks: list[str], i: int) -> bool:
        """toks[i] names the engine a setting is in, between the setting and its value ("in Octane")."""
        return toks[i] in self._engine_words and i > 0 and toks[i - 1] in ("in", "for", "on")

    def _next_enum(self, spec: ParamSpec, toks: list[str], i: int) -> int:
        """Where the next value of the enum ``spec`` starts at or after toks[i] (the end if none)."""
        return next((k for k in range(i, len(toks)) if self.cat.enum_value(spec, toks, k)), len(toks))

    def _sharing(self, spec: ParamSpec, value: str) -> ParamSpec | None:
        """The other parameter of this engine that has the enum value ``spec`` claims ("bf": secondary GI)."""
        return next((s for s in self.cat.specs.values() if s.engine == spec.engine and s.kind == "enum"
                     and s != spec and value in s.values and s.key.split("_")[-1] == spec.key.split("_")[-1]), None)

    def _restore_before(self, toks: list[str], i: int) -> bool:
        before = " " + " ".join(toks[max(0, i - 4):i]) + " "
        return any(f" {r} " in before for r in self.cues.restore)

    # ---- values without a name: "ok, using 4", "back to 25", "done" --------------------------------
    def _contextual(self, sentence, toks, low, used, status, ctx: Context, engine, here: list,
                    stated: bool = False, earlier: tuple[ParamSpec, ...] = ()) -> list[Mention]:
        named = bool(here)
        out: list[Mention] = []
        values, turned_down = [], []
        guess_ctx = replace(ctx, last=ctx.last + tuple(here), proposals=()) if here else ctx  # "it": what was named
        # "Filter 1 made the text alias. 1.5 is what we ship": a later sentence that names nothing and
        # leads with a value and a verdict goes on with what this message already set
        follows = bool(earlier) and not named and status != PROPOSED
        if follows:
            guess_ctx = replace(guess_ctx, last=guess_ctx.last + tuple(earlier))
        parsed = [P.parse_number(t) for t in toks]
        if not named and any(n is not None and self._other_subject(toks, i, used) for i, n in enumerate(parsed)):
            return out  # "Density back to 2.2": something the catalogue does not know, not the GI clamp
        previous, last = [], None  # the number before each token
        for i, num in enumerate(parsed):
            previous.append(last)
            if num is not None:
                last = i
        for i in range(len(toks)):
            if i in used:
                continue
            num = parsed[i]
            if num is None or _not_a_value(self.cues, toks, i) or "->" in toks[i + 1:i + 3]:  # "25 -> 50", "6500 K -> 5500 K"
                continue
            if status != PROPOSED and (_turned_down(self.cues, toks, i) or toks[i - 1:i] == ["than"]  # "nicer than 2.8"
                                       or " ".join(toks[max(0, i - 2):i]) == "instead of" and _chosen_before(self.cues, toks, i - 2)):
                turned_down.append((i, num))
                continue
            before = " " + " ".join(toks[max(0, i - 3):i]) + " "
            cue_words = self.cues.bare_value_cues if not named else self.cues.bare_value_cues_strong
            prev = toks[i - 1] if i else ""
            loose = not prev or not prev.isalpha() or prev in self.cues.join or prev in self.cues.before_join or prev in self.cues.after_cue_ok
            said = tuple(toks[i + 1:i + 3]) in self.cues.value_then_pairs or tuple(toks[i + 1:i + 2]) in self.cues.value_then \
                or (len(toks) <= 2 and status != PROPOSED and toks[i + 1:] in ([], ["then"]))  # a message that is a value
            said = loose and said or (status == APPLIED and prev not in ("no", "not") and self._offered(num, ctx))
            unit_says = bool(num.unit and not named and any(
                num.unit in ({s.unit.lower(), *s.units} - {""}) for s in ctx.last))  # "maybe 3000K?"
            replaces = previous[i] is not None and _turned_down(self.cues, toks, previous[i])  # "0.1 too soft, 0.03": 0.03 replaces it
            replaces = replaces and status != PROPOSED
            state = before.endswith(self.cues.state_before) and not named
            said = said or follows and _lead_verdict(self.cues, toks, i)
            if state or unit_says or said or replaces or prev in ("went", "go", "->") or any(f" {c} " in before for c in cue_words):
                values.append((i, num, any(f" {r} " in before for r in self.cues.restore), state))
            elif toks[i + 1:i + 2] == ["again"] and status != PROPOSED and loose:  # "16 crashed. 8 again."
                values.append((i, num, True, False))
        for i, num in turned_down:
            spec, value, unit = self._guess(num, guess_ctx)
            if spec is not None:
                used.add(i)
                out.append(_mention(spec, value, unit, REJECTED))
        if status == REJECTED and not named and not turned_down:
            restoring = {i for i, _, r, _ in values if r}
            out += self._rejection(toks, used | restoring, ctx, fallback=not restoring)
        for i, num, restore, state in values:
            if i in used:
                continue
            spec, value, unit = self._guess(num, guess_ctx)
            if spec is None:
                continue
            used.add(i)
            st = APPLIED if (restore or state or status != PROPOSED) else PROPOSED
            out.append(replace(_mention(spec, value, unit, st), restore=restore and st == APPLIED))
        bools = [spec for spec in reversed(ctx.last) if spec.kind == "bool"]
        if not any(s.kind == "bool" for s in here) and bools:  # "It was off! Turned it on."
            for phrase, value in self.cues.it_on_off:
                if phrase in low:
                    out.append(_mention(bools[0], value, "", APPLIED if status != PROPOSED else PROPOSED))
                    return out
        if named and status != PROPOSED and ctx.proposals:  # "I applied the first three but kept transmission at 12"
            taken = _taken(self.cues, ctx.proposals, toks, tuple(s.ident for s in here))
            if taken:
                out += taken
        loose_numbers = any(n and i not in used and not _not_a_value(self.cues, toks, i) for i, n in enumerate(parsed))
        if not values and not named and not stated and not loose_numbers and status != REJECTED and ctx.proposals \
                and not _has(low, self.cues.leaving):  # "ok leaving it": what is there stays, the proposal is not taken
            if _confirms(self.cues, low, toks) or _chooses(self.cues, low, toks):
                out += _confirmed(self.cues, ctx.proposals, toks, _confirms(self.cues, low, toks))
            else:
                out += _taken(self.cues, ctx.proposals, toks) or []  # "Did the first two."
        return out

    def _rejection(self, toks: list[str], used: set[int], ctx: Context, fallback: bool = True) -> list[Mention]:
        """A rejection without a parameter name: of the values it states ("the 15 was worse", "no, 8
        is too low"), else of the proposal just made ("no, keep it"), else of what was just applied
        ("that didn't help")."""
        stated = []
        for i, tok in enumerate(toks):
            num = P.parse_number(tok) if i not in used else None
            if num is not None and not (i + 1 < len(toks) and toks[i + 1] in self.cues.not_values):
                stated.append((i, num))
        out: list[Mention] = []
        for i, num in stated:
            for cand in (*ctx.proposals, *ctx.applied):
                spec = self.cat.specs.get((cand.engine, cand.parameter))
                got = P.number_for(spec, num) if spec else None
                if got and P.same_value(got[0], cand.value):
                    out.append(replace(cand, status=REJECTED))
                    used.add(i)
                    break
            else:
                spec = ctx.last[-1] if ctx.last else None
                got = P.number_for(spec, num) if spec and spec.kind in ("int", "number") else None
                if got:
                    out.append(_mention(spec, got[0], got[1], REJECTED))
                    used.add(i)
        if out or stated or not fallback:
            return out
        if any(P.parse_number(t) and i + 1 < len(toks) and toks[i + 1] in self.cues.not_values for i, t in enumerate(toks)):
            return out  # "back to 11 minutes per frame": about time, not a setting
        if ctx.proposals:
            return [replace(p, status=REJECTED) for p in ctx.proposals]
        return [replace(p, value=None, status=REJECTED) for p in ctx.applied]

    def _guess(self, num: P.Number, ctx: Context):
        """The parameter a bare value most likely belongs to: a proposal with that value, else the
        parameter last talked about."""
        numeric = ("number", "int", "range")
        for p in ctx.proposals:
            spec = self.cat.specs.get((p.engine, p.parameter))
            got = P.number_for(spec, num) if spec and spec.kind in numeric else None
            if got and (P.same_value(got[0], p.value) or isinstance(p.value, tuple)):
                return spec, got[0], got[1]
        if len(ctx.proposals) == 1:
            spec = self.cat.specs.get((ctx.proposals[0].engine, ctx.proposals[0].parameter))
            got = P.number_for(spec, num) if spec and spec.kind in numeric else None
            if got:
                return spec, got[0], got[1]
        for spec in reversed(ctx.last):  # the most recent parameter this value can belong to
            if spec.kind in ("number", "int"):
                got = P.number_for(spec, num)
                if got:
                    return spec, got[0], got[1]
        return None, None, ""

    def _offered(self, num: P.Number, ctx: Context) -> bool:
        """The value is exactly one the model (or the artist) just proposed ("variance, 0.01")."""
        for p in ctx.proposals:
            spec = self.cat.specs.get((p.engine, p.parameter))
            got = P.number_for(spec, num) if spec and spec.kind in ("int", "number") else None
            if got and not isinstance(p.value, tuple) and P.same_value(got[0], p.value):
                return True
        return False

    # ---- unknown parameters -----------------------------------------------------------------------
    def _candidates(self, toks, found, used, status, engine) -> list[Mention]:
        out = []
        words_at = {i for s, e, _ in found for i in range(s, e)}
        for i, tok in enumerate(toks):
            if i in used or i in words_at or i < 2:
                continue
            num = P.parse_number(tok)
            if num is None or num.unit in ("gb", "mb", "min", "h", "s", "fps"):
                continue
            if i + 1 < len(toks) and toks[i + 1] in self.cues.not_values:
                continue
            j = i - 1
            if toks[j] not in ("to", "=", ":", "at"):
                continue
            name = []
            k = j - 1
            while k >= 0 and len(name) < 3 and toks[k].isalpha() and toks[k] not in self.cues.stop and k not in words_at:
                name.insert(0, toks[k])
                k -= 1
            if not name or k < 0 or toks[k] not in self.cues.candidate_openers:
                continue
            value = int(num.value) if num.is_int else num.value
            out.append(Mention(engine=engine, parameter="_".join(name), value=value, unit=num.unit, status=status,
                               candidate=True, name=" ".join(name)))
            used.add(i)
        return out


_BY_CONTEXT = {(ANY, "light_intensity"): "hdri_intensity"}  # said after an HDRI word: the HDRI's
_SHUTTER = re.compile(r"1/(?:[2-9]|[1-9]\d{1,3})")  # 1/48, 1/125, 1/2000: a shutter speed said alone
_GPU_MODEL = re.compile(r"^[1-9]\d{2}0$")  # 3090, 4080, 1060: graphics cards, not values
_GEFORCE = re.compile(r"^[1-5]0[5-9]0$")  # the GeForce numbers themselves, said alone ("… noisy. 4090")


def _not_a_value(cues: Cues, toks: list[str], i: int) -> bool:
    """Numbers that are not settings: "14 minutes", "15:00", "shot 060", "frame 45", "the 3090"."""
    nxt = toks[i + 1] if i + 1 < len(toks) else ""
    prev = toks[i - 1] if i else ""
    if nxt == "min" and toks[i + 2:i + 3] and toks[i + 2] in cues.after_min and not _minutes(cues, toks, i):
        return False  # "instead of 0.02, min samples 256": the next setting's "min", not minutes
    if nxt in cues.not_values or (nxt == ":" and i + 2 < len(toks) and toks[i + 2].isdigit()):
        return True
    if re.fullmatch(r"\d{1,2}k", toks[i]):  # "in 4k now", "convert the plates to 8k": a size, said alone
        return True
    if prev in cues.products:  # "Octane 2023", "Houdini 20.5", "3ds Max 2024": a version
        return True
    if re.fullmatch(r"\d+(?:\.\d+)?x", toks[i]) and nxt in cues.ratio_after:
        return True  # "it's 3x slower"
    if prev in cues.not_value_before:
        return True
    if _GPU_MODEL.match(toks[i]) and prev in cues.card_before:
        return True
    return bool(_GEFORCE.match(toks[i])) and (
        prev in cues.geforce_before
        or nxt in cues.geforce_after
        or len(toks) <= 2)  # "… super noisy. 4090": the card it renders on


def complains(cues: Cues, text: str) -> bool:
    low = text.lower()
    return any(w in low for w in cues.old_value_bad)


def _chosen_before(cues: Cues, toks: list[str], k: int) -> bool:
    """The words before "instead of" at toks[k] end with a value that is a setting ("0.03 instead of
    0.02"), not a time or a speed ("9 minutes instead of 7", "1.6x instead of 3x")."""
    num = P.parse_number(toks[k - 1]) if k > 0 else None
    return num is not None and num.unit not in cues.time_units \
        and toks[k - 2:k - 1] not in (["frame"], ["frames"], ["shot"], ["fr"], ["v"], ["version"])


def _lead_verdict(cues: Cues, toks: list[str], i: int) -> bool:
    """The value at toks[i] leads its sentence ("50 is ok", "+1.3 good", "i put 10.", "20.") and what
    follows it is a verdict or nothing: a value given, not a time, a count or a size."""
    if i > 3 or not set(toks[:i]) <= cues.lead:
        return False
    nxt = toks[i + 1] if i + 1 < len(toks) else ""
    return not nxt or nxt in cues.verdict


def _label_before(toks: list[str], j: int) -> bool:
    """The "min"/"max" at toks[j] labels the value after it ("max subdivs 24, min 1"), not the one
    before it ("unified samples 32 min, 1024 max")."""
    if toks[j] not in ("min", "max") or j + 1 >= len(toks) or P.parse_number(toks[j + 1]) is None:
        return False
    return toks[j + 2:j + 3] not in (["min"], ["max"], ["minimum"], ["maximum"])


def _minutes(cues: Cues, toks: list[str], i: int) -> bool:
    """The number at toks[i] is a time: "it takes 4 min per frame", "down to 6 min"."""
    if toks[i + 1:i + 2] not in (["min"], ["mins"]):
        return False
    return (toks[i + 2] if i + 2 < len(toks) else "") in cues.minutes_after \
        or (toks[i - 1] if i else "") in cues.minutes_before


_OTHER_VALUE = re.compile(r"1/\d+|\d+\s?[x×]\s?\d+|\d{1,2}:\d{2}:\d{2}")  # 1/50, 3840x2160, 0:45:00


def _span(cues: Cues, toks: list[str], i: int, width: int = 0) -> list[str]:
    """The words said about the value at toks[i]: those after it, up to the next value (a time, a
    size or a count, "took 3h", "12gb", "9 minutes a frame", is not one)."""
    span: list[str] = []
    rest = toks[i + 1:]
    counted = 0  # a time or a count said in passing does not use up the words looked at
    for k, tok in enumerate(rest):
        if width and counted >= width:
            break
        num = P.parse_number(tok)
        nxt = rest[k + 1] if k + 1 < len(rest) else ""
        if num is not None and num.unit not in ("h", "min", "s", "gb", "mb", "x") and nxt not in cues.not_values \
                or _OTHER_VALUE.fullmatch(tok):
            break  # "made it 9 minutes a frame, no way": the 9 is a time, the words go on
        span.append(tok)
        counted += not (num is not None or tok in cues.not_values)
    return span


def _cleared(cues: Cues, span: list[str], j: int) -> bool:
    """The problem named at span[j] is what the value got rid of: "the fireflies are gone", "no more
    banding", "fixed the flicker", "because of fireflies"."""
    before, after = span[max(0, j - 2):j], span[j + 1:j + 4]
    return bool(cues.clearing_before & set(before)) or bool(cues.cleared_after & set(after))


def _turned_down(cues: Cues, toks: list[str], i: int) -> bool:
    """The words after the value at toks[i], up to the next number, turn it down."""
    span = _span(cues, toks, i, 6)
    if not span:
        return False
    text = " " + " ".join(span) + " "
    if any(w in cues.down_words and not _cleared(cues, span, j) for j, w in enumerate(span)):
        return True
    if any(f" {p} " in text for p in cues.down_phrases):
        return True
    return any(a == "too" and b in cues.too_what for a, b in zip(span, span[1:]))


def _states(cues: Cues, toks: list[str], start: int, end: int, at: int) -> bool:
    """The value at toks[at] is told as the parameter's state ("max samples is 16000??", "pixel samples
    is 9 i think?"), not asked for ("should I set max samples to 8?")."""
    between = toks[end:at]
    if at < end or not between or not set(between) <= cues.state_between or not set(between) & cues.state_verbs:
        return False
    return not cues.asking & set(toks[:start]) and not cues.asking & set(toks[at + 1:at + 3])


_MARKER = re.compile(r"^[ \t]*(?:\(?\d{1,2}[.)]|[-*•▪–])[ \t]+", re.M)  # "1) ", "2. ", "- ", "• "
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}.*$", re.M)  # |---|---|
_TABLE_ROW = re.compile(r"^[ \t]*\|(.+?)\|(.+?)\|?[ \t]*$", re.M)  # | setting | value |


def _layout(text: str) -> str:
    """Pasted notes read as sentences: list markers go ("1) Camera AA 4", "2. GI vs AA balance 16":
    the item numbers are not values) and a table row is "name: value". A lone "N. " opening a line
    is a marker only before a capitalised sentence of four words or more ("8. The chrome tap has
    sparkly pixels"); "20. Much better now" keeps its value."""
    if "|" in text:
        text = _TABLE_ROW.sub(lambda m: f"{m.group(1).strip()}: {m.group(2).strip().rstrip('|').strip()}.",
                              _TABLE_RULE.sub("", text))
    markers = _MARKER.findall(text)
    if len(markers) >= 2 or any(")" in m or not any(ch.isdigit() for ch in m) for m in markers):
        return _MARKER.sub("", text)
    return re.sub(r"^([ \t]*\d{1,2}\.[ \t]+)(?=[A-Z][a-z]* \w+ \w+ \w+)", "", text, flags=re.M)


def _sentences(cues: Cues, text: str) -> list[str]:
    out = []
    for s in cues.clause_split.split(text):
        if not s or not s.strip():
            continue
        if s.rstrip().endswith("?") and ", " in s:  # "I'm on 0.01 threshold, should I go lower?": the state, then the ask
            split = next(((head, rest) for head, _, rest in (s.rpartition(", "), s.partition(", "))  # the whole list
                          if cues.state_head_re.search(head.lower()) and not cues.asking_head_re.search(head.lower())), None)
            if split:
                out += list(split)
                continue
        head, comma, rest = s.rpartition(", ")
        if comma and not s.rstrip().endswith("?") and cues.later_re.search(rest.lower()) and not cues.later_re.search(head.lower()) \
                and not cues.asking_head_re.search(head.lower()):  # "min 8 max 128 for preview, final maybe 32/1024"
            out += [head, rest]
            continue
        out.append(s)
    return out


def _has(low: str, phrases) -> bool:
    return any(f" {p} " in low for p in phrases)


def _cue_after(cues: Cues, toks: list[str], i: int, phrases) -> bool:
    """A rejection said about the value at toks[i]: after it ("8 was worse"), or just before it
    ("forget the 0.01")."""
    after = " " + " ".join(_span(cues, toks, i)) + " "
    lead = next((k + 1 for k in range(i - 1, max(-1, i - 6), -1) if P.parse_number(toks[k]) is not None), max(0, i - 5))
    before = " " + " ".join(toks[lead:i]) + " "  # back to the value before it: "instead of 0.02, min samples 256"
    if i > 0 and toks[i - 1] == "no":
        return True  # "so no f/4"
    if any(f" {v} " in " " + " ".join(toks[:i]) + " " for v in cues.setting_verbs):
        return False  # "set GI clamp to 8, the room is too dark": the 8 is what was set
    return any(f" {p} " in after for p in phrases) or any(f" {p} " in before for p in cues.reject_before)


def _status(cues: Cues, sentence: str, toks: list[str], role: str) -> str:
    low = " " + " ".join(toks) + " "
    if role == "assistant":
        return PROPOSED
    opening = sentence.strip().lower()
    if _has(low, cues.reject_strong) or opening.startswith(("no,", "nope", "no.", "nah")):
        return REJECTED
    if _has(low, cues.reject) and any(P.parse_number(t) for t in toks):  # "8 is too low": about a value said
        return REJECTED
    if sentence.rstrip().endswith("?") or (toks and toks[0] in cues.question_start):
        return PROPOSED
    if cues.future_re.search(low):  # "final delivery will be 3840x2160": a plan, not what is set
        return PROPOSED
    strong = [p for p in cues.applied_strong if f" {p} " in low]
    weak = [p for p in cues.proposal if f" {p} " in low]
    if weak and not (strong and not cues.weak_proposal & set(weak)):
        return PROPOSED
    final = "final" in strong and not _has(low, cues.final_later)
    if weak and strong and (final or any(p in cues.changed_now for p in strong)):
        return APPLIED
    if weak:
        return PROPOSED
    return APPLIED


def _confirmed(cues: Cues, proposals: tuple[Mention, ...], toks: list[str], confirming: bool = True) -> list[Mention]:
    """What a bare confirmation ("done", "ok, did that", "went with your second suggestion", "second
    one.", "middle ground it is") applies: the proposal it points at by order — among the values of
    the one setting offered with options, else among all —, the middle one of three or more values
    for "middle", else every setting proposed with one value. A setting offered with options ("1024
    or 4096") that the answer does not choose between is *in doubt*: each option comes back unsure,
    so the ledger asks which instead of keeping the old value as if nothing had happened."""
    single = [p for p in proposals if not isinstance(p.value, tuple)]
    taken = _taken(cues, proposals, toks)
    if taken is not None:
        return taken
    options: dict[tuple[str, str, str], list[Mention]] = {}
    for p in single:
        if not any(P.same_value(p.value, o.value) for o in options.get((p.engine, p.parameter, p.scope), ())):
            options.setdefault((p.engine, p.parameter, p.scope), []).append(p)
    several = [ps for ps in options.values() if len(ps) > 1]
    for tok in toks:
        if tok in cues.ordinals and single:
            n = cues.ordinals[tok]
            if len(several) != 1 and not confirming:
                return []  # "second one." after "Option 1: … Option 2: …": groups of settings, not one value
            among = several[0] if len(several) == 1 else single
            return [replace(among[n], status=APPLIED, confirmed=True)] if -len(among) <= n < len(among) else []
    middle = bool(cues.middle & set(toks)) or " middle ground " in " " + " ".join(toks) + " "
    out: list[Mention] = []
    for ps in options.values():
        if len(ps) == 1:
            if len([m for m in out if m.sure]) < 3:
                out.append(replace(ps[0], status=APPLIED, confirmed=True))
        elif middle and len(ps) % 2 == 1 and all(isinstance(p.value, (int, float)) and not isinstance(p.value, bool)
                                                 for p in ps):
            out.append(replace(sorted(ps, key=lambda p: p.value)[len(ps) // 2], status=APPLIED, confirmed=True))
        else:
            out += [replace(p, status=APPLIED, confirmed=True, sure=False) for p in ps[:4]]
    return out


def _chooses(cues: Cues, low: str, toks: list[str]) -> bool:
    """A short answer that picks among the options just offered ("second one.", "middle ground it
    is", "yours") without a confirming word."""
    return len(toks) <= 8 and (any(t in cues.ordinals for t in toks) or bool(cues.middle & set(toks))
                               or _has(low, cues.choosing))


def _taken(cues: Cues, proposals: tuple[Mention, ...], toks: list[str], named: tuple = ()) -> list[Mention] | None:
    """"I applied the first three", "done on both", "went with your second suggestion", "did all of
    those": the proposals a message takes by count or order (None: it does not say)."""
    low = " " + " ".join(toks) + " "
    but = re.search(r"\b(?:everything|all of it|all of them|the rest|all)\b(?: \w+){0,4} (?:except|but|apart from|bar|other than)\b",
                    low)  # "everything but the denoiser", "I set everything as you listed except the diffuse depth"
    if but and named:
        after = set(low[but.end():].split()[:4]) - {"the", "a", "that", "which", "and"}
        return [replace(p, status=APPLIED) for p in proposals if not isinstance(p.value, tuple)
                and not ((p.engine, p.parameter) in named and set((p.name or p.parameter).lower().split()) & after)]
    single = [p for p in proposals if not isinstance(p.value, tuple) and (p.engine, p.parameter) not in named]
    if not any(f" {t} " in low for t in cues.took):
        return None
    for i, tok in enumerate(toks):
        n = cues.ordinals.get(tok)
        if n is not None and i + 1 < len(toks) and toks[i + 1] in cues.counts and n == 0:  # "the first three"
            return [replace(p, status=APPLIED) for p in single[:cues.counts[toks[i + 1]]]]
        if n is not None and i + 1 < len(toks) and toks[i + 1] in ("suggestion", "one", "option", "idea", "proposal"):
            return [replace(single[n], status=APPLIED)] if -len(single) <= n < len(single) else []
        if tok in cues.counts and (i + 1 == len(toks) or toks[i + 1] in ("of", "changes", "suggestions", "settings", "in",
                                                                     "now", "things", "and", "as", "you")):
            keys = {(p.engine, p.parameter) for p in single}
            if tok in ("both", "two", "three", "four") and len(keys) != cues.counts[tok]:
                continue
            return [replace(p, status=APPLIED) for p in single]
    return None


def _took_by_name(cues: Cues, spec: ParamSpec, toks: list[str], start: int, end: int,
                  proposals: tuple[Mention, ...]) -> Mention | None:
    """A proposal taken by naming its parameter without its value: "done on the max samples", "I
    applied the pixel samples change", "did the transmission one", "filter glossy applied"."""
    offered = [p for p in proposals if (p.engine, p.parameter) == spec.ident and not isinstance(p.value, tuple)]
    if len({repr(p.value) for p in offered}) != 1:
        return None  # nothing offered for it, or options ("2 or 4"): the name alone does not say which
    before = [t for t in toks[max(0, start - 4):start] if t not in cues.took_filler]
    after = toks[end:end + 2]
    if (before and before[-1] in cues.took_before) or (after and after[0] in cues.took_after and (
            after[0] not in ("too", "as", "like") and cues.took_before & set(toks[max(0, start - 4):start])
            or after[0] in ("done", "applied", "change's"))):
        return replace(offered[0], status=APPLIED)
    return None


def _confirms(cues: Cues, low: str, toks: list[str]) -> bool:
    return len(toks) <= 14 and _has(low, cues.confirm)


def _known(objects: tuple[str, ...], said: list[Mention]) -> tuple[str, ...]:
    """The objects named so far, with this message's (newest last, at most 16)."""
    new = [m.scope for m in said if m.scope and not m.candidate]
    if not new:
        return objects
    return tuple(dict.fromkeys([o for o in objects if o not in new] + new))[-16:]


def _nth_word(toks: list[str], n: int) -> int:
    """Where the n-th word (not counting clause marks) is in ``toks``."""
    seen = -1
    for i, t in enumerate(toks):
        if t != ",":
            seen += 1
            if seen == n:
                return i
    return len(toks) - 1


def _mention(spec: ParamSpec, value: Value, unit: str, status: str) -> Mention:
    return Mention(engine=spec.engine, parameter=spec.key, value=value, unit=unit, status=status, name=spec.name,
                   domain=spec.domain)


def _with_rejections(mentions: list[Mention]) -> list[Mention]:
    """"back to 25" also turns down the value in force, unless the message rejected one already."""
    out: list[Mention] = []
    for m in mentions:
        if m.restore and not any(x.status == REJECTED and (x.engine, x.parameter, x.scope) == (m.engine, m.parameter, m.scope)
                                 for x in mentions):
            out.append(replace(m, value=None, status=REJECTED, restore=False))
        out.append(m)
    return out


def _replaced(mentions: list[Mention], said_in: dict[int, int], past: set[int] = frozenset()) -> list[Mention]:
    """A value applied in one sentence and replaced by another in a later one ("SSS = 3: blotching
    reduced, still visible. Moving to 4.", "epsilon was 0.0001. went 0.001") was tried or given up: it
    becomes a rejection. A
    proposal a "yes" seemed to take, then given another value ("yes!! … reflective caustics I leave
    off"), was never taken."""
    out = []
    for n, m in enumerate(mentions):
        if m.status == APPLIED and not m.candidate and not m.restore and not m.before and any(
                (x.engine, x.parameter, x.scope) == (m.engine, m.parameter, m.scope) and x.status == APPLIED and not x.restore
                and not P.same_value(x.value, m.value) and said_in.get(id(x), 0) > said_in.get(id(m), 0)
                for x in mentions[n + 1:]) and not any(
                (x.engine, x.parameter, x.scope, x.status) == (m.engine, m.parameter, m.scope, REJECTED) for x in mentions):
            if m.confirmed or isinstance(m.value, bool) and said_in.get(id(m)) in past:
                continue  # "out-of-core was off; I've turned it on": how it was, not a value tried
            m = replace(m, status=REJECTED)
        out.append(m)
    return out


def _dedupe(mentions: list[Mention]) -> list[Mention]:
    """One mention per (engine, parameter, status): the last one said wins ("8, no, make it 12"); a
    proposal keeps each value offered ("8 or 16"), and an answer that did not choose between them
    keeps each option in doubt."""
    seen: dict[tuple, int] = {}
    out: list[Mention] = []
    for m in mentions:
        key = (m.engine, m.parameter, m.scope, m.status, m.candidate, m.before,
               repr(m.value) if m.status == PROPOSED or (m.confirmed and not m.sure) else None)
        if key in seen:
            out[seen[key]] = m
        else:
            seen[key] = len(out)
            out.append(m)
    return out
