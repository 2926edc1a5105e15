"""The offline provider: a deterministic, schema-grounded baseline that needs no model.

:class:`OfflineProvider` answers analytics questions with the same tools a language model gets and
sees nothing else: each call to :meth:`~OfflineProvider.complete` reads the conversation (the last
user message and the tool results that follow it) and decides the next step from scratch, so the
same conversation always gives the same events. Its plan for a question:

1. ``search_managers`` with the question;
2. choose the row manager (the manager the question names first, else the top hit) and fetch its
   schema, together with the schemas of the other managers the question names;
3. read the question against those schemas: comparisons (``denser than 5``, ``before 2025-06-01``)
   become numeric or date filters, boolean field words (``urgent``) become ``true`` filters,
   "how many" asks for a count, "highest density" for an ordering; the words left over are values
   (``cobalt``, ``Germany``, ``active``) which one round of ``query`` probes locates, together with
   the ``find_path`` routes to every manager a probe or condition may need;
4. one ``query`` on the row manager with Django-style filter paths built from those routes;
5. a plain answer from that result alone;
6. for a question that asks for a chart ("chart projects by status", "parts per material as a
   bar chart"), a ``chart`` call of that result before the answer, which then says what it shows.

When the turn's context holds recalled knowledge (``core/knowledge``) with a verified query that
fits the question (:mod:`.fitting`), it takes that road instead (:mod:`.recalled`): the first
response runs the verified query's calls, with another filter value where the question clearly
names one, and its chart; the second answers from those rows. No search, schema or path calls;
two model requests.

As the planner of planned orchestration it names a chart question's query and chart in the plan
itself, so the engine reads and draws them with no executor request; a fitting recalled verified
query's query and chart likewise.

It never calls ``mutate``: write requests get an honest refusal, as do questions it cannot map to
the data ("why", opinions, nothing matching).

The package, one module a job:

* :mod:`.provider` -- :class:`OfflineProvider`, one response per call;
* :mod:`.conversation` -- the current turn rebuilt from the history;
* :mod:`.planner` -- the next step of a turn (the plan above);
* :mod:`.words`, :mod:`.comparisons`, :mod:`.question` -- the question as words, comparisons and
  value phrases;
* :mod:`.schemas` -- facts read from a ``get_manager_schema`` result;
* :mod:`.reading` -- the question read against the fetched schemas (step 3);
* :mod:`.locating` -- value probes and ``find_path`` routes (step 3);
* :mod:`.filters` -- the Django-style filters of the final query (step 4);
* :mod:`.charting`, :mod:`.grouping` -- when a question asks for a chart, and which (step 6);
* :mod:`.planning`, :mod:`.chart_plan` -- the provider as a planned turn's planner;
* :mod:`.prose`, :mod:`.answers` -- the texts of answers and refusals (step 5);
* :mod:`.fitting`, :mod:`.recalled` -- whether a recalled verified query answers the question,
  and the road it opens.
"""

from __future__ import annotations

from .provider import OfflineProvider

__all__ = ["OfflineProvider"]
