"""One request: a candidate asked once with the agreed settings, its reply stored as returned
with what it cost, and graded. A failed request is recorded (`error`), not raised."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from judge.cases._case import Case
from judge.cases._hash import case_hash
from judge.endpoints._candidates import CandidateClient, CandidateRequestError
from judge.runs._grading import Grader
from judge.runs._preflight import Agreed
from judge.runs._records import RunRecord
from judge.runs._replies import reply_error

Job = tuple[str, Case, int]
"""(model, case, run)."""


@dataclass(frozen=True)
class Asker:
    """What every request of a run shares: the agreed settings, the settings stored with
    every record, and the grader."""

    agreed: Agreed
    settings: dict[str, Any]
    grader: Grader

    async def ask(
        self, client: CandidateClient, model: str, case: Case, run: int, body: dict[str, Any]
    ) -> RunRecord:
        """One request for (model, case, run) (its `request_body`), recorded and graded."""
        try:
            answer = await client.chat(body)
        except CandidateRequestError as exc:
            return self.failed(model, case, run, str(exc))
        spent = self.spent(model, answer.body, answer.latency_s, answer.attempts)
        return await self.grader.grade(self.record(model, case, run, answer.body, spent), case)

    def failed(self, model: str, case: Case, run: int, why: str) -> RunRecord:
        """The record of a request that got no reply."""
        return RunRecord(
            model=model,
            case_id=case.id,
            run=run,
            error=why,
            settings=self.settings,
            case_hash=case_hash(case),
        )

    def record(
        self, model: str, case: Case, run: int, body: Any, spent: dict[str, Any], **extra: Any
    ) -> RunRecord:
        """The record of a reply `body`, ungraded; `spent` as `spent` gave it."""
        return RunRecord(
            model=model,
            case_id=case.id,
            run=run,
            response=body,
            usage=spent["usage"],
            latency_s=spent["latency_s"],
            cost_usd=spent["cost_usd"],
            error=reply_error(body),
            attempts=spent["attempts"],
            settings=self.settings,
            **extra,
        )

    def spent(
        self,
        model: str,
        body: Any,
        latency_s: float | None,
        attempts: int,
        discount: float | None = None,
    ) -> dict[str, Any]:
        """What one request cost: its usage as returned, latency, attempts and price (from a
        batch, with its `discount`: no latency of its own, and the table's price less the
        discount unless the provider says what it charged)."""
        usage = body.get("usage") if isinstance(body, dict) else None
        usage = usage if isinstance(usage, dict) else None
        reported = usage.get("cost") if usage else None  # OpenRouter reports what it billed
        cost = (
            float(reported)
            if isinstance(reported, int | float)
            else self.agreed.models[model].cost(usage)
        )
        if discount is not None and cost is not None and not isinstance(reported, int | float):
            cost *= 1 - discount
        return {
            "usage": usage,
            "latency_s": None if latency_s is None else round(latency_s, 4),
            "attempts": attempts,
            "cost_usd": cost,
        }
