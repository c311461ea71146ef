"""A graph helper process (see plugin.graph_helpers): `python -m pytest_nosync.plugin.graph_helpers.helper`.

It answers on its stdout, which it keeps for the messages alone (stray prints go to its stderr): first the file of
the diffusers it imported, then one Outcome per GraphJob read from stdin (each run by helper_job), until a None.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import TYPE_CHECKING

from .pool import Outcome, diffusers_file, receive, send

if TYPE_CHECKING:
    from ...suite.pipelines import Prepared


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a print in a model's code must not corrupt the answers
    jobs = sys.stdin.buffer
    # torch, diffusers and the suite, after stdout is kept for the answers: an import that prints cannot corrupt them
    from .helper_job import one_thread_on_cpu, run

    send(answers, diffusers_file())
    pipelines: dict[tuple[str, str, str], Prepared] = {}
    while (job := receive(jobs)) is not None:
        one_thread_on_cpu(job)
        try:
            outcome = run(job, pipelines)
        except Exception:
            outcome = Outcome(failed=traceback.format_exc(limit=-3).strip().splitlines()[-1][:300])
        send(answers, outcome)


if __name__ == "__main__":
    main()
