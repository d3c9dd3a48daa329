"""The hand-off's state, apart from its view (static/widget/handoff-state.js), in the browser:
each event of the conversation's stream (docs/protocol.md, "The conversation event stream";
widget_server/handoff/events.py) reduced to what the view shows and says, the events' order
(duplicates, gaps, a snapshot), the first read's backlog of earlier hand-offs, the messages
(this tab's sends and another tab's), the pace of place-in-line announcements (A53), and the
leave-a-message form's checks. The module is imported into a page of the real server, as
test_client_modules.py imports model.js; what the view does with it is test_handoff_widget.py's."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.e2e


@pytest.fixture
def state_module(page: Page, live_server) -> str:
    page.goto(live_server.url + "/healthz")
    return live_server.url + "/static/widget/handoff-state.js"


def run(page: Page, url: str, body: str):
    """Runs `body` (an async function's statements) with the module's exports in scope."""
    return page.evaluate(
        f"""async (url) => {{
            const {{ HandoffState, POSITION_ANNOUNCE_MS, leftMessageErrors, nextOpening }} = await import(url);
            {body}
        }}""",
        url,
    )


def test_each_state_event_reduces_to_what_the_view_shows(page: Page, state_module):
    result = run(
        page,
        state_module,
        """
        const state = new HandoffState();
        const seen = [];
        const step = (type, data) => {
            const change = state.reduce(type, data);
            seen.push({ change, state: state.state, agent: state.agent, position: state.position });
        };
        step('agent.typing', { agent: 'Dana' });                 // nobody has it yet
        step('handoff.queued', { position: 3 });
        step('handoff.queued', { position: 2 });
        step('handoff.assigned', { agent: 'Dana' });
        step('agent.typing', { agent: 'Dana' });
        step('handoff.assigned', { agent: 'Dana' });              // again: nobody new
        step('handoff.assigned', { agent: 'Eli' });               // another agent
        step('handoff.ended', { agent: '', reason: 'timeout' });  // console gone: back in line
        step('handoff.queued', { position: 1 });
        step('handoff.unavailable', { reason: 'busy' });          // a request's outcome, no state
        step('replayed', {});
        step('handoff.ended', { agent: '', reason: 'visitor' });
        step('handoff.ended', { agent: '', reason: 'visitor' });  // said once
        return seen;
        """,
    )
    none = {"kind": "none"}
    entered = {"kind": "entered", "joined": False, "queuedAnew": False}
    assert result == [
        {"change": none, "state": "none", "agent": "", "position": 0},
        {
            "change": {**entered, "before": "none", "state": "queued", "queuedAnew": True},
            "state": "queued",
            "agent": "",
            "position": 3,
        },
        {"change": {**entered, "before": "queued", "state": "queued"}, "state": "queued", "agent": "", "position": 2},
        {
            "change": {**entered, "before": "queued", "state": "assigned", "joined": True},
            "state": "assigned",
            "agent": "Dana",
            "position": 2,
        },
        {"change": {"kind": "typing", "agent": "Dana"}, "state": "assigned", "agent": "Dana", "position": 2},
        {
            "change": {**entered, "before": "assigned", "state": "assigned"},
            "state": "assigned",
            "agent": "Dana",
            "position": 2,
        },
        {
            "change": {**entered, "before": "assigned", "state": "assigned", "joined": True},
            "state": "assigned",
            "agent": "Eli",
            "position": 2,
        },
        # Named after the agent who had it, though the event names nobody.
        {"change": {"kind": "lapsed", "agent": "Eli"}, "state": "queued", "agent": "", "position": 2},
        {"change": {**entered, "before": "queued", "state": "queued"}, "state": "queued", "agent": "", "position": 1},
        {"change": none, "state": "queued", "agent": "", "position": 1},
        {"change": none, "state": "queued", "agent": "", "position": 1},
        {"change": {"kind": "ended", "agent": "", "reason": "visitor"}, "state": "none", "agent": "", "position": 0},
        {"change": none, "state": "none", "agent": "", "position": 0},
    ]


def test_an_agent_ending_it_is_named_and_a_queued_lapse_changes_nothing(page: Page, state_module):
    result = run(
        page,
        state_module,
        """
        const state = new HandoffState();
        const queued = state.enter({ state: 'queued', position: '4' });  // a number as text
        const position = state.position;
        const lapse = state.reduce('handoff.ended', { agent: 'Dana', reason: 'timeout' });
        state.enter({ state: 'assigned', agent: 'Dana' });
        const ended = state.reduce('handoff.ended', { agent: '', reason: 'ended' });
        return { queued, position, lapse, ended, left: state.position, active: state.active };
        """,
    )
    assert result["queued"]["queuedAnew"] is True
    assert result["lapse"] == {"kind": "none"}  # only an assigned hand-off lapses
    assert result["ended"] == {"kind": "ended", "agent": "Dana", "reason": "ended"}
    assert result["position"] == 4 and result["left"] == 0 and result["active"] is False


def test_events_are_applied_once_in_order_and_a_gap_is_read_again(page: Page, state_module):
    result = run(
        page,
        state_module,
        """
        const state = new HandoffState();
        const place = (type, seq, id) => state.place({ type, data: seq == null ? {} : { seq }, id });
        const out = [];
        out.push(place('handoff.queued', 1));
        state.applied(1);
        out.push(place('handoff.queued', 1));                  // a resume's overlap
        out.push(place('handoff.assigned', 3));                // 2 is missing
        out.push(place('handoff.assigned', 2));
        state.applied(2);
        out.push(place('agent.typing', null, 'c_1:3'));       // the seq from the SSE id
        out.push(place('conversation.snapshot', 1));           // a snapshot replaces the state
        out.push(place('agent.typing', null, undefined));     // no seq at all: applied
        return { out, lastSeq: state.lastSeq };
        """,
    )
    assert result["out"] == [
        {"verdict": "apply", "seq": 1},
        {"verdict": "duplicate", "seq": 1},
        {"verdict": "gap", "seq": 3},
        {"verdict": "apply", "seq": 2},
        {"verdict": "apply", "seq": 3},
        {"verdict": "apply", "seq": 1},
        {"verdict": "apply", "seq": 0},
    ]
    assert result["lastSeq"] == 2


def test_the_first_reads_backlog_keeps_only_this_handoffs_newest_state(page: Page, state_module):
    result = run(
        page,
        state_module,
        """
        const state = new HandoffState();
        state.requested({});   // no seq in the answer: the stream is read from 0
        const caughtUp = state.catchUp;
        const ev = (seq, type, data = {}) => ({ type, data: { seq, ...data }, id: `c_1:${seq}` });
        const events = [
            ev(1, 'handoff.queued', { position: 1 }),
            ev(2, 'handoff.ended', { agent: '', reason: 'visitor' }),  // an earlier hand-off: past
            ev(3, 'handoff.unavailable', { reason: 'no_agents' }),     // and another: past
            ev(4, 'handoff.queued', { position: 2 }),
            ev(5, 'agent.typing', { agent: 'Dana' }),
            ev(6, 'handoff.ended', { agent: 'Dana', reason: 'timeout' }),  // a lapse: not over
            ev(7, 'handoff.assigned', { agent: 'Dana' }),
            ev(8, 'agent.message', { text: 'hi' }),
        ];
        const kept = state.foldBacklog(events);
        return { caughtUp, after: state.catchUp, lastSeq: state.lastSeq,
                 kept: kept.map((event) => [event.data.seq, event.type]), untouched: events[3].type };
        """,
    )
    assert result["caughtUp"] is True and result["after"] is False
    assert result["lastSeq"] == 3  # the stream goes on after the last hand-off that was over
    assert result["kept"] == [
        [4, "replayed"],
        [5, "agent.typing"],
        [6, "replayed"],
        [7, "handoff.assigned"],
        [8, "agent.message"],
    ]
    assert result["untouched"] == "handoff.queued"  # the events read are not rewritten


def test_a_request_with_a_seq_reads_after_it_and_another_conversation_starts_over(page: Page, state_module):
    result = run(
        page,
        state_module,
        """
        const state = new HandoffState();
        state.bind('c_1');
        state.requested({ seq: '7' });
        const first = { lastSeq: state.lastSeq, catchUp: state.catchUp };
        state.requested({ seq: 5 });          // never back
        const kept = state.lastSeq;
        state.bind('c_1');
        const same = state.lastSeq;
        state.bind('c_2');
        const other = state.lastSeq;
        state.enter({ state: 'assigned', agent: 'Dana' });
        state.seen.add('m_1');
        state.sending({ text: 'hello' });
        state.forget();
        return { first, kept, same, other, after: [state.state, state.agent, state.seen.size,
                 state.pendingSends.length, state.conversationId] };
        """,
    )
    assert result["first"] == {"lastSeq": 7, "catchUp": False}
    assert result["kept"] == 7 and result["same"] == 7 and result["other"] == 0
    assert result["after"] == ["none", "", 0, 0, ""]


def test_a_resume_after_a_reload_enters_its_state_and_reads_after_its_seq(page: Page, state_module):
    result = run(
        page,
        state_module,
        """
        const state = new HandoffState();
        const change = state.resume({ state: 'queued', position: 2, seq: 9 });
        state.positionHeard(1000);
        return { change, lastSeq: state.lastSeq, spoken: state.positionSpoken,
                 toSay: state.positionToSay(2000) };
        """,
    )
    assert result["change"] == {
        "kind": "entered",
        "before": "none",
        "state": "queued",
        "joined": False,
        "queuedAnew": True,
    }
    assert result["lastSeq"] == 9 and result["spoken"] == 2
    assert result["toSay"] == 0  # heard before the reload: not said again


def test_messages_are_shown_once_and_this_tabs_sends_are_confirmed(page: Page, state_module):
    result = run(
        page,
        state_module,
        """
        const state = new HandoffState();
        const mine = { text: 'my question', item: 'its turn' };
        state.sending(mine);
        const other = { text: 'another', item: 'a turn' };
        state.sending(other);
        const out = [];
        out.push(state.message('agent', { message_id: 'm_1', text: 'hello' }));
        out.push(state.message('agent', { message_id: 'm_1', text: 'hello' }));   // again
        out.push(state.message('visitor', { message_id: 'm_2', text: 'my question' }));
        out.push(state.message('visitor', { message_id: 'm_3', text: 'from another tab' }));
        state.settled(other);   // its answer came
        state.settled(other);   // twice: nothing else goes
        out.push(state.message('visitor', { message_id: 'm_4', text: 'another' }));
        return { out, pending: state.pendingSends.length, seen: [...state.seen] };
        """,
    )
    assert result["out"] == [
        {"kind": "agent"},
        {"kind": "none"},
        {"kind": "confirmed", "pending": {"text": "my question", "item": "its turn"}},
        {"kind": "visitor"},
        {"kind": "visitor"},
    ]
    assert result["pending"] == 0
    assert result["seen"] == ["m_1", "m_2", "m_3", "m_4"]


@pytest.mark.parametrize(
    ("snapshot", "expected"),
    [
        ({"state": "assigned", "agent": "Dana"}, {"kind": "entered", "state": "assigned", "joined": True}),
        ({"state": "queued", "position": 2}, {"kind": "entered", "state": "queued", "joined": False}),
        ({"state": "ended", "agent": "Dana"}, {"kind": "ended", "agent": "Dana", "reason": "ended"}),
    ],
)
def test_a_snapshot_brings_the_messages_not_yet_shown_then_its_state(page: Page, state_module, snapshot, expected):
    result = page.evaluate(
        """async ([url, snapshot]) => {
            const { HandoffState } = await import(url);
            const state = new HandoffState();
            state.enter({ state: 'assigned', agent: 'Eli' });
            state.seen.add('m_1');
            const { messages, change } = state.snapshot({
                ...snapshot,
                messages: [{ message_id: 'm_1', role: 'agent' }, { message_id: 'm_2', role: 'visitor' }],
            });
            const ids = messages.map((message) => message.message_id);
            const stateBefore = state.state;   // unchanged until the messages are in
            return { ids, stateBefore, change: change(), after: state.state };
        }""",
        [state_module, snapshot],
    )
    assert result["ids"] == ["m_2"]
    assert result["stateBefore"] == "assigned"
    change = result["change"]
    assert {key: change[key] for key in expected} == expected
    assert result["after"] == {"assigned": "assigned", "queued": "queued", "ended": "none"}[snapshot["state"]]


def test_the_place_in_line_is_said_at_most_every_thirty_seconds(page: Page, state_module):
    result = run(
        page,
        state_module,
        """
        const state = new HandoffState();
        const out = { interval: POSITION_ANNOUNCE_MS };
        state.enter({ state: 'queued', position: 3 });
        out.first = [state.positionWait(0, false), state.positionToSay(0)];  // never said yet: now
        state.enter({ state: 'queued', position: 2 });
        out.soon = state.positionWait(10000, false);                          // 20 s to go
        out.asked = state.positionWait(10000, true);                          // just queued: now
        out.later = state.positionWait(30000, false);
        out.second = state.positionToSay(31000);
        out.same = state.positionToSay(40000);                                // said already
        state.enter({ state: 'assigned', agent: 'Dana' });
        state.position = 1;
        out.assigned = state.positionToSay(80000);                            // not in line
        return out;
        """,
    )
    assert result == {
        "interval": 30000,
        "first": [0, 3],
        "soon": 20000,
        "asked": 0,
        "later": 0,
        "second": 2,
        "same": 0,
        "assigned": 0,
    }


def test_a_left_message_needs_text_and_an_address_that_can_be_one(page: Page, state_module):
    result = run(
        page,
        state_module,
        """
        return [
            leftMessageErrors('', 'Call me back'),
            leftMessageErrors('dana@example.com', 'Call me back'),
            leftMessageErrors('dana@example', '  '),
            leftMessageErrors('dana example.com', 'text'),
        ];
        """,
    )
    assert result == [
        {"emailInvalid": False, "textMissing": False},
        {"emailInvalid": False, "textMissing": False},
        {"emailInvalid": True, "textMissing": True},
        {"emailInvalid": True, "textMissing": False},
    ]


def test_the_next_opening_is_counted_in_the_visitors_calendar_days(page: Page, state_module):
    result = run(
        page,
        state_module,
        """
        const now = new Date(2026, 2, 10, 22, 30);      // 10 March, 22:30 local time
        const at = (day, hour) => new Date(2026, 2, day, hour).toISOString();
        const days = (opensAt) => nextOpening(opensAt, now)?.days ?? null;
        return [days(at(10, 23)), days(at(11, 1)), days(at(13, 9)), days(''), days('not a date'),
                nextOpening(at(11, 9), now).when.getHours()];
        """,
    )
    assert result == [0, 1, 3, None, None, 9]
