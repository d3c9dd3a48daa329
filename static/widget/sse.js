// Event-stream reader: bytes in, events out; no DOM, no network. Rules from
// the HTML Living Standard §9.2.6 "Interpreting an event stream" ("§6";
// "dispatch N" is step N of its "dispatch the event"):
// https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
//   const parser = createEventStreamParser(({ type, data, id }) => ...);
//   parser.feed(uint8array); ... parser.end();
// To reconnect, send parser.lastEventId as Last-Event-ID after parser.retry
// ms (null: unset) and feed the new body to the same parser. onEvent runs
// inside feed().

/** @typedef {{ type: string, data: string, id: string }} ServerSentEvent */

/** @param {(event: ServerSentEvent) => void} onEvent */
export function createEventStreamParser(onEvent) {
  let decoder, parts, skipLF, data, type, idBuffer;
  let lastEventId = ''; // the "last event ID string"
  /** @type {number | null} */
  let retry = null;

  // A new stream: empty buffers, no part line (§6). The last event ID
  // string stays; an id read in an event that never got its blank line is
  // dropped, as only dispatch 1 commits it.
  function reset() {
    // §6 "UTF-8 decode": bad bytes become U+FFFD, one leading BOM is
    // stripped (a second is data); {stream: true} joins split sequences.
    decoder = new TextDecoder();
    parts = []; // the unfinished line
    skipLF = false; // the text so far ended in CR
    data = type = '';
    idBuffer = lastEventId;
  }

  function dispatch() {
    // dispatch 1: the last event ID string takes the buffer's value.
    lastEventId = idBuffer;
    // dispatch 2: an empty data buffer fires nothing, clears the type.
    if (!data) {
      type = '';
      return;
    }
    // dispatch 3: drop the final LF; 5-6: type, or "message" if empty;
    // 7: clear both buffers.
    const event = { type: type || 'message', data: data.slice(0, -1), id: lastEventId };
    data = type = '';
    onEvent(event);
  }

  /** @param {string} line */
  function processLine(line) {
    // §6: a blank line dispatches.
    if (!line) return dispatch();
    const colon = line.indexOf(':');
    // §6: a line starting with a colon is a comment.
    if (!colon) return;
    // §6: field before the first colon, value after it less ONE leading
    // space; no colon: the line is the field, the value is empty.
    let field = line;
    let value = '';
    if (colon > 0) {
      field = line.slice(0, colon);
      value = line.slice(line[colon + 1] === ' ' ? colon + 2 : colon + 1);
    }
    // §6 "process the field" (names are case-sensitive); other fields are ignored.
    switch (field) {
      case 'event':
        type = value;
        break;
      case 'data':
        data += `${value}\n`;
        break;
      case 'id': // ignored if the value holds a NULL
        if (!value.includes('\0')) idBuffer = value;
        break;
      case 'retry': // only all ASCII digits, base ten (empty: ignored)
        if (/^[0-9]+$/.test(value)) retry = parseInt(value, 10);
        break;
    }
  }

  /** @param {string} text */
  function processText(text) {
    let start = 0;
    // §6: CRLF is one line break even when split across chunks.
    if (skipLF && text) {
      if (text[0] === '\n') start = 1;
      skipLF = false;
    }
    // §6: lines end at CRLF, LF or CR. Only new text is searched; a part
    // line is joined once, when it ends (O(total), not O(n^2)).
    const lineBreak = /\r\n|\r|\n/g;
    lineBreak.lastIndex = start;
    for (let match = lineBreak.exec(text); match; match = lineBreak.exec(text)) {
      parts.push(text.slice(start, match.index));
      const line = parts.join('');
      parts = [];
      start = lineBreak.lastIndex;
      // A final CR may be the first half of a CRLF.
      skipLF = start === text.length && match[0] === '\r';
      processLine(line);
    }
    if (start < text.length) parts.push(text.slice(start));
  }

  reset();
  return {
    feed(bytes) {
      processText(decoder.decode(bytes, { stream: true }));
    },
    // End of stream: §6 discards an event with no blank line after it (and
    // an unterminated last line); the parser is ready for a reconnection.
    end: reset,
    // Forget the current stream (an aborted one); keeps lastEventId, retry.
    reset,
    get lastEventId() {
      return lastEventId;
    },
    get retry() {
      return retry;
    },
  };
}
