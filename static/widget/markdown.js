/* Progressive, safe markdown for streamed chat answers (CommonMark subset, GFM tables).
 * createMarkdownView(root, {strings, headingOffset, protocols, code, math}) → {update, append, finish, blocks, text}.
 * Complete lines only advance the parser; a block closes when a complete line ends it,
 * is rendered once and never touched again; an update re-renders only the open tail.
 * DOM via createElement/createTextNode/setAttribute only; raw HTML stays text; links
 * need an absolute http(s)/mailto URL; images render as their alt text. Math ($…$, $$…$$,
 * \(…\), \[…\]) is a span of its source whose plain text is the TeX (options.math draws it).
 * §: https://spec.commonmark.org/0.31.2/; tests: tests/e2e/test_markdown.py. */

// The panel passes translated ones (i18n.js, markdownSummaries).
const DEFAULT_SUMMARIES = {
  codeBlock: (language, lines) =>
    `Code block, ${language ? `${language}, ` : ''}${lines} line${lines === 1 ? '' : 's'}.`,
  table: (columns, rows) =>
    `Table, ${columns} column${columns === 1 ? '' : 's'}, ${rows} row${rows === 1 ? '' : 's'}.`,
};
const ENTITY_SOURCE = '&(?:#(\\d{1,7})|#[xX]([\\da-fA-F]{1,6})|(amp|lt|gt|quot|apos|nbsp));';
const ENTITY = new RegExp(ENTITY_SOURCE, 'y');
const ESCAPE_OR_ENTITY = new RegExp(`\\\\([!-/:-@[-\`{-~])|${ENTITY_SOURCE}`, 'g');
const NAMED_ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\xa0' };
const AUTOLINK =
  /<(?:([A-Za-z][A-Za-z\d+.-]{1,31}:[^<>\0-\x20]*)|([\w.!#$%&'*+/=?^`{|}~-]+@[A-Za-z\d-]+(?:\.[A-Za-z\d-]+)*))>/y;
const DESTINATION =
  /\([ \t\n]*(?:<([^<>\n]*)>|((?:\\.|[^\0-\x20()\\]|\((?:\\.|[^\0-\x20()\\])*\))*))(?:[ \t\n]+(?:"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|\((?:\\.|[^()\\])*\)))?[ \t\n]*\)/y;
const SPECIAL = /[\\`*_[!<&\n$]/g;
// Math, by pandoc's tex_math_dollars rule: `$` opens before a non-space and closes after one,
// not before a digit, so "$5 and $10" stays text; no backtick inside, so math never takes part
// of a code span (docs/accessibility.md A114).
const MATH =
  /\$\$([^`]+?)\$\$|\$(?![\s$])((?:\\[^`]|[^\\$`])*?(?:\\[^`]|[^\s\\$`]))\$(?!\d)|\\\(([^`]+?)\\\)|\\\[([^`]+?)\\\]/y;
const PUNCTUATION = /[\p{P}\p{S}]/u;
const WHITESPACE = /\s/;
const FENCE = /^(`{3,}|~{3,})[ \t]*(.*)$/;
const HEADING = /^(#{1,6})(?:[ \t](.*))?$/;
const RULE = /^([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const LIST_ITEM = /^([*+-]|(\d{1,9})[.)])(?:([ \t]+)(.*))?$/;
const NON_BLANK = /[^ \t]/;

const element = (tag, attributes) => {
  const node = document.createElement(tag);
  for (const name in attributes) node.setAttribute(name, attributes[name]);
  return node;
};
const textNode = (text) => document.createTextNode(text);
const fragment = () => document.createDocumentFragment();
const linkElement = (href) => element('a', { href, rel: 'noopener noreferrer', target: '_blank' });

function matchAt(pattern, source, index) {
  pattern.lastIndex = index;
  return pattern.exec(source);
}

function decodeEntity(decimal, hex, name) {
  if (name) return NAMED_ENTITIES[name];
  const code = decimal ? +decimal : parseInt(hex, 16);
  return String.fromCodePoint(
    code > 0 && code < 0x110000 && (code < 0xd800 || code > 0xdfff) ? code : 0xfffd,
  );
}

function safeUrl(url, protocols) {
  try {
    const parsed = new URL(url.replace(/\p{Cc}/gu, ''));
    return protocols.includes(parsed.protocol) ? parsed.href : '';
  } catch {
    return '';
  }
}

function indentation(line) {
  let columns = 0;
  for (const char of line) {
    if (char === ' ') columns++;
    else if (char === '\t') columns += 4 - (columns % 4);
    else break;
  }
  return columns;
}

function unindent(line, count) {
  let columns = 0,
    index = 0;
  for (; columns < count && index < line.length; index++) {
    if (line[index] === ' ') columns++;
    else if (line[index] === '\t') {
      const width = 4 - (columns % 4);
      if (columns + width > count)
        return ' '.repeat(columns + width - count) + line.slice(index + 1);
      columns += width;
    } else break;
  }
  return line.slice(index);
}

// Table cells; "\|" is a literal pipe (NUL, never in a line, stands in for it).
const tableCells = (line) =>
  line
    .trim()
    .replace(/\\\|/g, '\0')
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((cell) => cell.trim().replace(/\0/g, '|'));

function delimiterRow(text) {
  const cells = tableCells(text);
  if (text.includes('|') && cells.every((cell) => /^:?-+:?$/.test(cell))) {
    return cells.map((cell) => {
      const left = cell[0] === ':',
        right = cell.endsWith(':');
      return left && right ? 'center' : left ? 'left' : right ? 'right' : '';
    });
  }
}

function runEnd(source, index) {
  const char = source[index];
  while (source[index] === char) index++;
  return index;
}

function closingBracket(source, index) {
  for (let depth = 0; index < source.length; index++) {
    const char = source[index];
    if (char === '\\') index++;
    else if (char === '`') {
      const end = runEnd(source, index);
      const close = source.indexOf(source.slice(index, end), end);
      index = close < 0 ? end - 1 : close + end - index - 1;
    } else if (char === '[') depth++;
    else if (char === ']' && !--depth) return index;
  }
  return -1;
}

function renderInline(source, parent, protocols, inLink) {
  const items = [];
  let text = '',
    index = 0;
  const push = (node) => {
    if (text) items.push(textNode(text));
    text = '';
    if (node) items.push(node);
  };
  while (index < source.length) {
    const special = matchAt(SPECIAL, source, index);
    const next = special ? special.index : source.length;
    text += source.slice(index, next);
    if (!special) break;
    index = next;
    const char = source[index];
    const math = (char === '$' || /[([]/.test(source[index + 1])) && matchAt(MATH, source, index);
    if (math) {
      const [whole, display, dollar, paren] = math;
      const node = element('span', {
        'data-tex': (display ?? dollar ?? paren ?? math[4]).trim(),
        'data-math': display || math[4] ? 'block' : 'inline',
      });
      node.appendChild(textNode(whole));
      push(node);
      index += whole.length;
      continue;
    }
    if (char === '\\') {
      const escaped = source[index + 1];
      const escapes = escaped === '\n' || (escaped && /[!-/:-@[-`{-~]/.test(escaped));
      if (escaped === '\n') push(element('br'));
      else text += escapes ? escaped : char;
      index += escapes ? 2 : 1;
      continue;
    }
    const end = runEnd(source, index);
    if (char === '$') {
      // An unclosed "$$" stays text whole, never an inline "$…$" until its close comes.
      text += source.slice(index, end);
      index = end;
      continue;
    }
    if (char === '`') {
      let close = -1;
      // §6.1
      for (let start = source.indexOf('`', end); start >= 0 && close < 0; ) {
        const closeEnd = runEnd(source, start);
        if (closeEnd - start === end - index) close = start;
        else start = source.indexOf('`', closeEnd);
      }
      if (close < 0) {
        text += source.slice(index, end);
        index = end;
        continue;
      }
      let code = source.slice(end, close).replace(/\n/g, ' ');
      if (code[0] === ' ' && code.at(-1) === ' ' && /[^ ]/.test(code)) code = code.slice(1, -1);
      const node = element('code');
      node.appendChild(textNode(code));
      push(node);
      index = close + end - index;
      continue;
    }
    if (char === '*' || char === '_') {
      // §6.2: flanking
      const before = source[index - 1] || ' ',
        after = source[end] || ' ',
        spaceBefore = WHITESPACE.test(before),
        spaceAfter = WHITESPACE.test(after),
        punctuationBefore = PUNCTUATION.test(before),
        punctuationAfter = PUNCTUATION.test(after),
        left = !spaceAfter && (!punctuationAfter || spaceBefore || punctuationBefore),
        right = !spaceBefore && (!punctuationBefore || spaceAfter || punctuationAfter);
      push({
        delimiter: char,
        count: end - index,
        length: end - index,
        canOpen: char === '*' ? left : left && (!right || punctuationBefore),
        canClose: char === '*' ? right : right && (!left || punctuationAfter),
      });
      index = end;
      continue;
    }
    // Inside a link's text, a link is text, an image is not (§6.3).
    const image = char === '!';
    const close =
      (char === '[' || (image && source[index + 1] === '[')) && (image || !inLink)
        ? closingBracket(source, index + (image ? 1 : 0))
        : -1;
    const destination =
      close > 0 && source[close + 1] === '(' && matchAt(DESTINATION, source, close + 1);
    if (destination) {
      const href =
        !image &&
        safeUrl(
          (destination[1] ?? destination[2]).replace(
            ESCAPE_OR_ENTITY,
            (_, escapedChar, decimal, hex, name) => escapedChar || decodeEntity(decimal, hex, name),
          ),
          protocols,
        );
      const node = href ? linkElement(href) : fragment();
      renderInline(source.slice(index + (image ? 2 : 1), close), node, protocols, true);
      index = close + 1 + destination[0].length;
      if (image) text += node.textContent;
      else push(node);
      continue;
    }
    const autolink = char === '<' && matchAt(AUTOLINK, source, index);
    if (autolink) {
      const [whole, uri, email] = autolink;
      const href = !inLink && safeUrl(uri || `mailto:${email}`, protocols);
      const node = href ? linkElement(href) : fragment();
      node.appendChild(textNode(uri || email));
      push(node);
      index += whole.length;
      continue;
    }
    const entity = char === '&' && matchAt(ENTITY, source, index);
    if (entity) {
      text += decodeEntity(entity[1], entity[2], entity[3]);
      index += entity[0].length;
    } else if (char === '\n') {
      const hardBreak = / {2,}$/.test(text); // §6.7
      text = text.replace(/ +$/, '');
      if (hardBreak) push(element('br'));
      else text += char;
      index++;
    } else {
      text += char;
      index++;
    }
  }
  push();
  // §6.2: a closer takes the nearest opener of its kind (rule of 3).
  for (let closerAt = 0; closerAt < items.length; closerAt++) {
    const closer = items[closerAt];
    for (
      let openerAt = closerAt - 1;
      closer.delimiter && closer.canClose && closer.count && openerAt >= 0;
      openerAt--
    ) {
      const opener = items[openerAt];
      if (
        opener.delimiter !== closer.delimiter ||
        !opener.canOpen ||
        !opener.count ||
        ((opener.canClose || closer.canOpen) &&
          !((opener.length + closer.length) % 3) &&
          (opener.length % 3 || closer.length % 3))
      )
        continue;
      const used = opener.count > 1 && closer.count > 1 ? 2 : 1;
      const emphasis = element(used > 1 ? 'strong' : 'em');
      opener.count -= used;
      closer.count -= used;
      appendItems(items.splice(openerAt + 1, closerAt - openerAt - 1, emphasis), emphasis);
      closerAt = openerAt + 1; // the closer again: it may have some left
      break;
    }
  }
  appendItems(items, parent);
}

function appendItems(items, parent) {
  for (const item of items) {
    if (!item.delimiter) parent.appendChild(item);
    else if (item.count) parent.appendChild(textNode(item.delimiter.repeat(item.count)));
  }
}

// What a screen reader says: text, <br> as a space, math as its TeX (A115).
function plainTextOf(node) {
  let text = '';
  const walker = document.createTreeWalker(
    node,
    NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT,
    (next) => {
      const tex = /** @type {HTMLElement} */ (next).dataset?.tex;
      if (tex == null) return NodeFilter.FILTER_ACCEPT;
      text += tex;
      return NodeFilter.FILTER_REJECT;
    },
  );
  for (let next = walker.nextNode(); next; next = walker.nextNode()) {
    if (next.nodeType === Node.TEXT_NODE) text += next.textContent;
    else if (next.nodeName === 'BR') text += ' ';
  }
  return text.replace(/\s+/g, ' ').trim();
}

const codeLanguage = (block) => {
  const word = block.info.split(/[ \t]/)[0];
  return /^[A-Za-z0-9_+-]+$/.test(word) ? word : '';
};

function closeLeaf(state) {
  if (state.leaf) state.ended.push(state.leaf);
  state.leaf = null;
}

function openLeaf(state, depth, block, offset) {
  closeLeaf(state);
  state.stack.length = depth;
  block.offset = offset;
  block.path = state.stack.slice();
  block.lines ||= [];
  state.leaf = block;
}

// State: `stack`, the open list items; `leaf`, the open leaf block ({kind, lines,
// offset, path}); `ended`, leaves to render; `provisional`: the unterminated line's.
function feedLine(state, rawLine, offset) {
  const stack = state.stack;
  let line = rawLine.replace(/\r$/, '').replace(/\0/g, '\ufffd'),
    leaf = state.leaf,
    depth = 0,
    inListItem = false;
  const blank = !NON_BLANK.test(line);
  while (depth < stack.length && (blank || indentation(line) >= stack[depth].contentColumn)) {
    line = unindent(line, stack[depth].contentColumn);
    depth++;
  }
  if (leaf?.kind === 'code') {
    if (depth === stack.length) {
      const fence = indentation(line) < 4 && /^(`{3,}|~{3,})[ \t]*$/.exec(line.trim());
      if (fence && fence[1][0] === leaf.fence[0] && fence[1].length >= leaf.fence.length)
        return closeLeaf(state);
      leaf.lines.push(unindent(line, leaf.fenceIndent));
      return;
    }
    closeLeaf(state);
    leaf = null;
  }
  if (blank) return closeLeaf(state);
  for (;;) {
    const paragraph =
      (leaf?.kind === 'paragraph' || leaf?.kind === 'list-item') &&
      (leaf.lines.length || depth === stack.length);
    const continuing = paragraph && leaf.lines.length && depth === stack.length;
    const indent = indentation(line);
    const content = indent < 4 ? line.trimStart() : '';
    if (content) {
      const alignments = continuing && delimiterRow(content);
      if (alignments && alignments.length === tableCells(leaf.lines.at(-1)).length) {
        const header = leaf.lines.at(-1);
        leaf.lines = leaf.lines.slice(0, -1);
        if (!leaf.lines.length) state.leaf = null;
        const table = { kind: 'table', alignments, lines: [header, content] };
        return openLeaf(state, depth, table, leaf.lastLineOffset);
      }
      const fence = FENCE.exec(content);
      if (fence && !(fence[1][0] === '`' && fence[2].includes('`'))) {
        const code = { kind: 'code', fence: fence[1], fenceIndent: indent, info: fence[2].trim() };
        return openLeaf(state, depth, code, offset);
      }
      const heading = HEADING.exec(content);
      if (heading || RULE.test(content)) {
        const text = (heading?.[2] || '').replace(/(^|[ \t]+)#+[ \t]*$/, '');
        const block = heading
          ? { kind: 'heading', level: heading[1].length, lines: [text] }
          : { kind: 'rule' };
        openLeaf(state, depth, block, offset);
        return closeLeaf(state);
      }
      if (content[0] === '>') {
        const quoted = content.slice(1).replace(/^[ \t]/, '');
        if (leaf?.kind === 'quote' && depth === stack.length) {
          leaf.lines.push(quoted);
          return;
        }
        return openLeaf(state, depth, { kind: 'quote', lines: [quoted] }, offset);
      }
      const item = LIST_ITEM.exec(content);
      // §5.2: a list item interrupts a paragraph only with text, an ordered one only from 1.
      const [, marker, number, spacing = '', itemText = ''] = item || [];
      if (item && !(continuing && (!NON_BLANK.test(itemText) || (number && +number !== 1)))) {
        const sibling = stack[depth],
          markerChar = marker.slice(-1),
          spacingWidth = spacing.replace(/\t/g, '    ').length;
        closeLeaf(state);
        stack.length = depth++;
        stack.push({
          list:
            sibling?.list.marker === markerChar
              ? sibling.list
              : {
                  marker: markerChar,
                  ordered: !!number,
                  start: +number,
                  provisional: state.provisional,
                },
          contentColumn:
            indent +
            marker.length +
            (spacingWidth < 5 && NON_BLANK.test(itemText) ? spacingWidth : 1),
          provisional: state.provisional,
        });
        line = itemText;
        leaf = null;
        inListItem = true;
        if (NON_BLANK.test(line)) continue;
        return openLeaf(state, depth, { kind: 'list-item', lastLineOffset: offset }, offset);
      }
    }
    if (paragraph) {
      leaf.lines.push(line.trimStart());
      leaf.lastLineOffset = offset;
    } else if (leaf?.kind === 'table' && depth === stack.length) leaf.lines.push(line);
    else if (leaf?.kind === 'quote' && NON_BLANK.test(leaf.lines.at(-1)))
      leaf.lines.push(line.trimStart());
    else {
      const kind = inListItem ? 'list-item' : 'paragraph';
      openLeaf(state, depth, { kind, lines: [line.trimStart()], lastLineOffset: offset }, offset);
    }
    return;
  }
}

export function createMarkdownView(root, options = {}) {
  const summaries = { ...DEFAULT_SUMMARIES, ...options.strings },
    protocols = options.protocols || ['http:', 'https:', 'mailto:'],
    quoteDepth = options._depth | 0,
    // options.dirAuto (the panel): each block takes its direction from its first strong letter
    // (HTML dir=auto), so an English line in an Arabic answer, or the reverse, reads in order.
    blockDir = options.dirAuto ? { dir: 'auto' } : {};
  // `pending`: the text after the last complete line.
  let text, pending, pendingOffset, state, finished;
  let closedBlocks, openBlocks, provisionalNodes, growing;

  function reset() {
    root.replaceChildren();
    text = '';
    pending = '';
    pendingOffset = 0;
    state = { stack: [], ended: [] };
    finished = false;
    closedBlocks = [];
    openBlocks = [];
    provisionalNodes = [];
    growing = null;
  }

  // options.math (chat.js): draws math spans, now or once math.js has come (lazy).
  function inline(source, parent) {
    renderInline(source, parent, protocols);
    const formulas = options.math && parent.querySelectorAll('[data-tex]');
    if (formulas?.length) options.math(formulas);
  }

  // Lists and items made on first use; those of the unterminated line are provisional.
  function containerFor(path) {
    let parent = root;
    const attach = (owner, container) => {
      container.appendChild(owner.element);
      if (owner.provisional) provisionalNodes.push(owner.element);
    };
    for (const item of path) {
      const list = item.list;
      if (!list.element) {
        const start = list.ordered && list.start !== 1 && { start: list.start };
        list.element = element(list.ordered ? 'ol' : 'ul', start);
        attach(list, parent);
      }
      if (!item.element) {
        item.element = element('li', blockDir);
        attach(item, list.element);
      }
      parent = item.element;
    }
    return parent;
  }

  function tableRow(block, line, cellTag) {
    const row = element('tr'),
      cells = tableCells(line);
    block.alignments.forEach((alignment, column) => {
      const cell = element(cellTag, cellTag === 'th' ? { ...blockDir, scope: 'col' } : blockDir);
      if (alignment) cell.setAttribute('align', alignment);
      inline(cells[column] || '', cell);
      row.appendChild(cell);
    });
    return row;
  }

  // An open code block or table grows: its complete lines (`firmLines`) are drawn once.
  function renderBlock(block, closed, firmLines) {
    const kind = block.kind,
      parent = containerFor(block.path);
    let node, plain;
    if (kind === 'code' || kind === 'table') {
      const headerLines = kind === 'table' ? 2 : 0,
        lineCount = block.lines.length - headerLines,
        firm = closed ? lineCount : firmLines,
        key = `${kind}${block.offset}\n${kind === 'code' ? block.info : `${block.lines[0]}\n${block.lines[1]}`}`;
      if (growing?.key !== key) {
        growing?.node.remove();
        // A table scrolls sideways in a box the panel names by data-label (A40, scroll-follow.js).
        const box = element(kind === 'code' ? 'pre' : 'table');
        node = box;
        if (headerLines) {
          node = element('div', { class: 'md-wide' });
          node.appendChild(box);
          box.appendChild(element('thead')).appendChild(tableRow(block, block.lines[0], 'th'));
        }
        const language = !headerLines && codeLanguage(block);
        const body = headerLines
          ? element('tbody')
          : element('code', language && { class: `language-${language}` });
        growing = { key, drawn: 0, node, body: box.appendChild(body) };
      }
      // options.code (chat.js): a firm code line goes through its language's line renderer
      // once there is one (code-blocks.js, lazy), each once; the lines drawn before, once more.
      const code = !headerLines && options.code;
      if (code && !growing.line) {
        growing.line = code.lines(codeLanguage(block));
        for (let at = 0; growing.line && at < growing.drawn; at++)
          growing.body.replaceChild(growing.line(block.lines[at]), growing.body.childNodes[at]);
      }
      const unit = (line, firmLine) =>
        kind !== 'code'
          ? tableRow(block, block.lines[line], 'td')
          : firmLine && growing.line
            ? growing.line(block.lines[line])
            : textNode(`${block.lines[line]}\n`);
      for (; growing.drawn < firm; growing.drawn++)
        growing.body.appendChild(unit(growing.drawn + headerLines, true));
      growing.partial?.remove();
      growing.partial =
        lineCount > firm ? growing.body.appendChild(unit(firm + headerLines)) : null;
      growing.used = true;
      node = growing.node;
      plain =
        kind === 'code'
          ? summaries.codeBlock(codeLanguage(block), lineCount)
          : summaries.table(block.alignments.length, lineCount);
      if (headerLines) node.dataset.label = plain;
      if (closed) growing = null;
      if (node.parentNode !== parent || node.nextSibling) parent.appendChild(node);
      if (closed && code) code.closed(node, codeLanguage(block));
      return { kind, plain, closed };
    }
    if (kind === 'rule') node = element('hr');
    else if (kind === 'quote' && quoteDepth < 9) {
      node = element('blockquote');
      const quote = createMarkdownView(node, { ...options, _depth: quoteDepth + 1 });
      quote.update(block.lines.join('\n'));
      quote.finish();
      plain = quote
        .blocks()
        .map((inner) => inner.plain)
        .join(' ');
    } else {
      const words = block.lines.join('\n').trim();
      // No words yet ("# "): an empty <hN> would be an empty heading to a screen reader.
      node =
        kind === 'heading' && words
          ? element(
              `h${Math.max(1, Math.min(6, block.level + (options.headingOffset | 0)))}`,
              blockDir,
            )
          : kind === 'list-item' || kind === 'heading'
            ? fragment()
            : element('p', blockDir);
      inline(words, node);
    }
    plain ??= plainTextOf(node);
    if (!closed)
      provisionalNodes.push(...(node instanceof DocumentFragment ? node.childNodes : [node]));
    parent.appendChild(node);
    return { kind, plain, closed };
  }

  function advance(more) {
    for (const node of provisionalNodes) node.remove();
    provisionalNodes = [];
    if (growing) growing.used = false;
    pending += more;
    const lines = pending.split('\n');
    pending = lines.pop();
    for (const line of lines) {
      feedLine(state, line, pendingOffset);
      pendingOffset += line.length + 1;
    }
    if (finished) {
      if (pending) feedLine(state, pending, pendingOffset);
      pendingOffset += pending.length;
      pending = '';
      closeLeaf(state);
    }
    for (const block of state.ended) closedBlocks.push(renderBlock(block, true));
    state.ended = [];
    // The unterminated line runs on a scratch state (open leaf's lines truncated back).
    const leaf = state.leaf,
      firmLineCount = leaf?.lines.length,
      scratch = {
        stack: state.stack.slice(),
        leaf: leaf && { ...leaf },
        ended: [],
        provisional: true,
      };
    if (pending) feedLine(scratch, pending, pendingOffset);
    openBlocks = [...scratch.ended, scratch.leaf].filter(Boolean).map((block) => {
      const sameLeaf = leaf?.offset === block.offset && leaf.kind === block.kind;
      return renderBlock(
        block,
        false,
        sameLeaf ? firmLineCount - (block.kind === 'table' ? 2 : 0) : 0,
      );
    });
    if (leaf) leaf.lines.length = firmLineCount;
    if (growing?.used === false) {
      growing.node.remove();
      growing = null;
    }
  }

  // A text not extending the previous one (a snapshot) re-renders from scratch.
  function update(full) {
    const next = String(full);
    if (next === text) return;
    if (finished || next.slice(0, text.length) !== text) reset();
    const more = next.slice(text.length);
    text = next;
    advance(more);
  }

  function append(delta) {
    if (finished) return update(text + delta);
    text += delta;
    advance(String(delta));
  }

  function finish() {
    if (finished) return;
    finished = true;
    advance('');
  }

  reset();
  return {
    update,
    append,
    finish,
    blocks: (from = 0) => closedBlocks.slice(from).concat(openBlocks),
    text: () => text,
  };
}
