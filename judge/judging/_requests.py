"""What a judge would send, for asking elsewhere: a provider's batches, or a runner that
answers a batch input file. `Judge.for_batches` gives it once; the batch room works with it
alone (the requests of a case, replies taken or refused), never back through the judge."""

from __future__ import annotations

from dataclasses import dataclass

from jinja2 import TemplateError

from judge.cases._calls import ShapeError
from judge.cases._case import Case
from judge.endpoints._client import Reply
from judge.endpoints._endpoint import Endpoint
from judge.judging._asker import Asked, Asker
from judge.judging._questions import Questioner


@dataclass(frozen=True)
class Requests:
    """A judge's endpoint, what it asks of a case, and the asker that takes (or refuses)
    the replies to its requests."""

    endpoint: Endpoint
    questioner: Questioner
    asker: Asker
    samples: int

    async def of(self, case: Case) -> list[Asked]:
        """The requests grading `case` would send now, each with its cache key and whether
        the cache answers it already: what a batch submits (the uncached ones)."""
        if case.response is None:
            return []
        questioner = self.questioner
        try:
            questions = questioner.questions(case, questioner.check(case)).questions
        except (TemplateError, ShapeError):  # grading records `judge_error`, asking nothing
            return []
        return await self.asker.requests(questions, self.samples)

    async def accept(self, asked: Asked, reply: Reply) -> str | None:
        """Take a reply obtained elsewhere (a batch's output) for a request `of` listed, as if
        the judge had asked it: validated exactly as online and, when usable, cached under
        the request's key. Returns why it cannot be used (None: kept)."""
        return await self.asker.accept(asked, reply)

    def refuse(self, refused: dict[str, str], *, offline: str | None = None) -> None:
        """Never ask the requests of these cache keys (that case gets `judge_error` with the
        reason), nor, with `offline`, any request the cache does not answer: after a batch,
        what must not be asked online."""
        self.asker.refuse(refused, offline=offline)
