/* Progressive, safe markdown for streamed chat answers (CommonMark subset, GFM tables).
 * createMarkdownView(el, {strings, headingOffset, protocols}) → {update, append, finish, blocks}.
 * Complete lines only advance the parser; a block closes when a complete line ends it,
 * is rendered once and never touched again; an update re-renders only the open tail.
 * DOM via createElement/createTextNode/setAttribute only; raw HTML stays text; links
 * need an absolute http(s)/mailto URL; images render as their alt text. */

const STRINGS = {
  codeBlock: (lang, n) => `Code block, ${lang ? lang + ', ' : ''}${n} line${n === 1 ? '' : 's'}.`,
  table: (c, r) => `Table, ${c} column${c === 1 ? '' : 's'}, ${r} row${r === 1 ? '' : 's'}.`,
};
const ENT_SRC = '&(?:#(\\d{1,7})|#[xX]([\\da-fA-F]{1,6})|(amp|lt|gt|quot|apos|nbsp));';
const ENT = new RegExp(ENT_SRC, 'y');
const UNESC = new RegExp('\\\\([!-/:-@[-`{-~])|' + ENT_SRC, 'g');
const NAMED = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\xa0' };
const AUTO =
  /<(?:([A-Za-z][A-Za-z\d+.-]{1,31}:[^<>\x00-\x20]*)|([\w.!#$%&'*+/=?^`{|}~-]+@[A-Za-z\d-]+(?:\.[A-Za-z\d-]+)*))>/y;
const DEST =
  /\([ \t\n]*(?:<([^<>\n]*)>|((?:\\.|[^\x00-\x20()\\]|\((?:\\.|[^\x00-\x20()\\])*\))*))(?:[ \t\n]+(?:"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|\((?:\\.|[^()\\])*\)))?[ \t\n]*\)/y;
const SPECIAL = /[\\`*_[!<&\n]/g;
const PUNCT = /[\p{P}\p{S}]/u;
const WS = /\s/;
const FENCE = /^(`{3,}|~{3,})[ \t]*(.*)$/;
const ATX = /^(#{1,6})(?:[ \t](.*))?$/;
const HR = /^([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const LI = /^([*+-]|(\d{1,9})[.)])(?:([ \t]+)(.*))?$/;
const TEXT = /[^ \t]/;

const el = (tag, attrs) => {
  const e = document.createElement(tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
};
const txt = (s) => document.createTextNode(s);
const frag = () => document.createDocumentFragment();
const link = (href) => el('a', { href, rel: 'noopener noreferrer', target: '_blank' });

const ent = (m) => {
  if (m[3]) return NAMED[m[3]];
  const c = m[1] ? +m[1] : parseInt(m[2], 16);
  return String.fromCodePoint(c > 0 && c < 0x110000 && (c < 0xd800 || c > 0xdfff) ? c : 0xfffd);
};

function safe(u, protos) {
  try {
    const p = new URL(u.replace(/[\x00-\x1f\x7f-\x9f]/g, ''));
    return protos.includes(p.protocol) ? p.href : '';
  } catch {
    return '';
  }
}

function indent(s) {
  let c = 0;
  for (const ch of s) {
    if (ch === ' ') c++;
    else if (ch === '\t') c += 4 - (c % 4);
    else break;
  }
  return c;
}

// Removes n columns of indentation (tab stops of 4).
function strip(s, n) {
  let c = 0,
    i = 0;
  for (; c < n && i < s.length; i++) {
    if (s[i] === ' ') c++;
    else if (s[i] === '\t') {
      const w = 4 - (c % 4);
      if (c + w > n) return ' '.repeat(c + w - n) + s.slice(i + 1);
      c += w;
    } else break;
  }
  return s.slice(i);
}

// Table cells; "\|" is a literal pipe (NUL, never in a line, stands in for it).
const cells = (l) =>
  l
    .trim()
    .replace(/\\\|/g, '\0')
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((c) => c.trim().replace(/\0/g, '|'));

function delim(t) {
  const c = t.includes('|') && cells(t);
  if (c && c.every((x) => /^:?-+:?$/.test(x))) {
    return c.map((x) =>
      x[0] === ':' ? (x.endsWith(':') ? 'center' : 'left') : x.endsWith(':') ? 'right' : '',
    );
  }
}

function bracket(s, i) {
  for (let d = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\\') i++;
    else if (c === '`') {
      let e = i;
      while (s[e] === '`') e++;
      const k = s.indexOf(s.slice(i, e), e);
      i = k < 0 ? e - 1 : k + e - i - 1;
    } else if (c === '[') d++;
    else if (c === ']' && !--d) return i;
  }
  return -1;
}

function inline(src, parent, protos, inLink) {
  const items = [];
  let buf = '',
    i = 0,
    a,
    img,
    m2;
  const push = (n) => {
    if (buf) items.push(txt(buf));
    buf = '';
    if (n) items.push(n);
  };
  while (i < src.length) {
    SPECIAL.lastIndex = i;
    const m = SPECIAL.exec(src),
      j = m ? m.index : src.length;
    buf += src.slice(i, j);
    if (!m) break;
    const c = src[(i = j)];
    if (c === '\\') {
      const d = src[i + 1];
      if (d === '\n') push(el('br'));
      else if (d && /[!-/:-@[-`{-~]/.test(d)) buf += d;
      else {
        buf += c;
        i--;
      }
      i += 2;
    } else if (c === '`') {
      let e = i,
        end = -1;
      while (src[e] === '`') e++;
      for (let k = e, q; (k = src.indexOf('`', k)) >= 0; k = q) {
        for (q = k; src[q] === '`'; ) q++;
        if (q - k === e - i) {
          end = k;
          break;
        }
      }
      if (end < 0) {
        buf += src.slice(i, e);
        i = e;
        continue;
      }
      let s = src.slice(e, end).replace(/\n/g, ' ');
      if (s[0] === ' ' && s.at(-1) === ' ' && /[^ ]/.test(s)) s = s.slice(1, -1);
      const x = el('code');
      x.appendChild(txt(s));
      push(x);
      i = end + e - i;
    } else if (c === '*' || c === '_') {
      let e = i;
      while (src[e] === c) e++;
      const b = src[i - 1] || ' ',
        f = src[e] || ' ',
        bw = WS.test(b),
        fw = WS.test(f),
        bp = PUNCT.test(b),
        fp = PUNCT.test(f),
        l = !fw && (!fp || bw || bp),
        r = !bw && (!bp || fw || fp);
      push({
        ch: c,
        n: e - i,
        len: e - i,
        o: c === '*' ? l : l && (!r || bp),
        c: c === '*' ? r : r && (!l || fp),
      });
      i = e;
    } else if (
      (c === '[' || (c === '!' && src[i + 1] === '[')) &&
      (a = (img = c === '!') || !inLink ? bracket(src, i + img) : -1) > 0 &&
      src[a + 1] === '(' &&
      ((DEST.lastIndex = a + 1), (m2 = DEST.exec(src)))
    ) {
      const inner = src.slice(i + img + 1, a),
        h =
          !img &&
          safe(
            (m2[1] ?? m2[2]).replace(UNESC, (m, e, ...g) => e || ent([m, ...g])),
            protos,
          ),
        x = h ? link(h) : frag();
      i = DEST.lastIndex;
      inline(inner, x, protos, 1);
      if (img) buf += x.textContent;
      else push(x);
    } else if (c === '<' && ((AUTO.lastIndex = i), (a = AUTO.exec(src)))) {
      const h = !inLink && safe(a[1] || 'mailto:' + a[2], protos),
        t = txt(a[1] || a[2]),
        x = h ? link(h) : frag();
      x.appendChild(t);
      push(x);
      i += a[0].length;
    } else if (c === '&' && ((ENT.lastIndex = i), (a = ENT.exec(src)))) {
      buf += ent(a);
      i += a[0].length;
    } else if (c === '\n') {
      const hard = / {2,}$/.test(buf);
      buf = buf.replace(/ +$/, '');
      if (hard) push(el('br'));
      else buf += c;
      i++;
    } else {
      buf += c;
      i++;
    }
  }
  push();
  // Emphasis: CommonMark's delimiter runs (flanking, rule of 3).
  for (let i = 0; i < items.length; i++) {
    const c = items[i];
    for (let j = i - 1; c.ch && c.c && c.n && j >= 0; j--) {
      const o = items[j];
      if (
        o.ch !== c.ch ||
        !o.o ||
        !o.n ||
        ((o.c || c.o) && !((o.len + c.len) % 3) && (o.len % 3 || c.len % 3))
      )
        continue;
      const k = o.n > 1 && c.n > 1 ? 2 : 1,
        e = el(k > 1 ? 'strong' : 'em');
      o.n -= k;
      c.n -= k;
      out(items.splice(j + 1, i - j - 1, e), e);
      i = j + 1;
      break;
    }
  }
  out(items, parent);
}
function out(items, p) {
  for (const x of items) {
    if (!x.ch) p.appendChild(x);
    else if (x.n) p.appendChild(txt(x.ch.repeat(x.n)));
  }
}

// What a screen reader says: text, <br> as a space.
function plainOf(n) {
  const w = document.createTreeWalker(n, 5);
  let s = '',
    x;
  while ((x = w.nextNode())) s += x.nodeType === 3 ? x.data : x.nodeName === 'BR' ? ' ' : '';
  return s.replace(/\s+/g, ' ').trim();
}

const lang = (b) => {
  const l = b.info.split(/[ \t]/)[0];
  return /^[A-Za-z0-9_+-]+$/.test(l) ? l : '';
};

function end(st) {
  if (st.leaf) st.out.push(st.leaf);
  st.leaf = null;
}

function start(st, d, b, off) {
  end(st);
  st.stack.length = d;
  b.s = off;
  b.path = st.stack.slice();
  b.lines ||= [];
  st.leaf = b;
}

// One line at offset off. State: open list items {list, ci: content column}, one
// open leaf {k: kind, lines, s: offset, path: its items}.
function feed(st, raw, off) {
  const stk = st.stack;
  let s = raw.replace(/\r$/, '').replace(/\0/g, '\ufffd'),
    L = st.leaf,
    d = 0,
    fresh = 0,
    m;
  const blank = !TEXT.test(s);
  for (; d < stk.length && (blank || indent(s) >= stk[d].ci); d++) s = strip(s, stk[d].ci);
  if (L && L.k === 'code') {
    if (d === stk.length) {
      const f = indent(s) < 4 && /^(`{3,}|~{3,})[ \t]*$/.exec(s.trim());
      if (f && f[1][0] === L.f[0] && f[1].length >= L.f.length) return end(st);
      return void L.lines.push(strip(s, L.fi));
    }
    end(st);
    L = null;
  }
  if (blank) return end(st);
  for (;;) {
    const para =
        L && (L.k === 'paragraph' || L.k === 'list-item') && (L.lines.length || d === stk.length),
      strict = para && L.lines.length && d === stk.length,
      i = indent(s),
      t = i < 4 ? s.trimStart() : '';
    if (t) {
      if (strict && (m = delim(t)) && m.length === cells(L.lines.at(-1)).length) {
        const h = L.lines.at(-1);
        L.lines = L.lines.slice(0, -1);
        if (!L.lines.length) st.leaf = null;
        return start(st, d, { k: 'table', al: m, lines: [h, t] }, L.ls);
      }
      if ((m = FENCE.exec(t)) && !(m[1][0] === '`' && m[2].includes('`'))) {
        return start(st, d, { k: 'code', f: m[1], fi: i, info: m[2].trim() }, off);
      }
      if ((m = ATX.exec(t)) || HR.test(t)) {
        start(
          st,
          d,
          m
            ? {
                k: 'heading',
                n: m[1].length,
                lines: [(m[2] || '').replace(/(^|[ \t]+)#+[ \t]*$/, '')],
              }
            : { k: 'rule' },
          off,
        );
        return end(st);
      }
      if (t[0] === '>') {
        const q = t.slice(1).replace(/^[ \t]/, '');
        if (L && L.k === 'quote' && d === stk.length) return void L.lines.push(q);
        return start(st, d, { k: 'quote', lines: [q] }, off);
      }
      if ((m = LI.exec(t)) && !(strict && (!TEXT.test(m[4] || '') || (m[2] && +m[2] !== 1)))) {
        const prev = stk[d],
          mk = m[1].slice(-1),
          w = (m[3] || '').replace(/\t/g, '    ').length;
        end(st);
        stk.length = d++;
        stk.push({
          list: prev && prev.list.m === mk ? prev.list : { m: mk, o: !!m[2], n: +m[2], p: st.p },
          ci: i + m[1].length + (w < 5 && TEXT.test(m[4] || '') ? w : 1),
          p: st.p,
        });
        s = m[4] || '';
        L = null;
        fresh = 1;
        if (TEXT.test(s)) continue;
        return start(st, d, { k: 'list-item', ls: off }, off);
      }
    }
    if (para) {
      L.lines.push(s.trimStart());
      L.ls = off;
    } else if (L && L.k === 'table' && d === stk.length) L.lines.push(s);
    else if (L && L.k === 'quote' && TEXT.test(L.lines.at(-1))) L.lines.push(s.trimStart());
    else
      start(st, d, { k: fresh ? 'list-item' : 'paragraph', lines: [s.trimStart()], ls: off }, off);
    return;
  }
}

export function createMarkdownView(root, options = {}) {
  const S = { ...STRINGS, ...options.strings },
    protos = options.protocols || ['http:', 'https:', 'mailto:'],
    depth = options._depth | 0;
  let text, rest, pos, st, done, closed, open, prov, grow;

  function reset() {
    root.replaceChildren();
    text = rest = '';
    pos = 0;
    st = { stack: [], out: [] };
    done = false;
    closed = [];
    open = [];
    prov = [];
    grow = null;
  }

  // Lists and items made on first use; those of the unterminated line are provisional.
  function ensure(path) {
    let par = root;
    const mount = (o, p) => {
      p.appendChild(o.el);
      if (o.p) prov.push(o.el);
    };
    for (const it of path) {
      const l = it.list;
      if (!l.el)
        mount(l, par, (l.el = el(l.o ? 'ol' : 'ul', l.o && l.n !== 1 ? { start: l.n } : 0)));
      if (!it.el) mount(it, l.el, (it.el = el('li')));
      par = it.el;
    }
    return par;
  }

  function row(b, line, tag) {
    const tr = el('tr'),
      c = cells(line);
    b.al.forEach((a, j) => {
      const td = el(tag, tag === 'th' ? { scope: 'col' } : 0);
      if (a) td.setAttribute('align', a);
      inline(c[j] || '', td, protos);
      tr.appendChild(td);
    });
    return tr;
  }

  // Block b closed (fin) or open (removed next run). An open code block or table grows:
  // lines/rows of complete lines are appended once, the unterminated one is a tail.
  function render(b, fin, firm) {
    const k = b.k,
      par = ensure(b.path);
    let node, plain;
    if (k === 'code' || k === 'table') {
      const key = k + b.s + '\n' + (k === 'code' ? b.info : b.lines[0] + '\n' + b.lines[1]),
        base = k === 'table' ? 2 : 0,
        n = b.lines.length - base,
        f = fin ? n : firm;
      if (grow?.key !== key) {
        grow?.node.remove();
        const t = el(k === 'code' ? 'pre' : 'table');
        if (base) t.appendChild(el('thead')).appendChild(row(b, b.lines[0], 'th'));
        grow = {
          key,
          n: 0,
          node: t,
          box: t.appendChild(
            base ? el('tbody') : el('code', lang(b) ? { class: 'language-' + lang(b) } : 0),
          ),
        };
      }
      const g = grow,
        unit = (j) => (k === 'code' ? txt(b.lines[j] + '\n') : row(b, b.lines[j], 'td'));
      for (; g.n < f; g.n++) g.box.appendChild(unit(g.n + base));
      g.tail?.remove();
      g.tail = n > f ? g.box.appendChild(unit(f + base)) : null;
      g.used = 1;
      node = g.node;
      plain = k === 'code' ? S.codeBlock(lang(b), n) : S.table(b.al.length, n);
      if (fin) grow = null;
      if (node.parentNode !== par || node.nextSibling) par.appendChild(node);
    } else {
      if (k === 'rule') node = el('hr');
      else if (k === 'quote' && depth < 9) {
        const v = createMarkdownView((node = el('blockquote')), { ...options, _depth: depth + 1 });
        v.update(b.lines.join('\n'));
        v.finish();
        plain = v
          .blocks()
          .map((x) => x.plain)
          .join(' ');
      } else {
        const words = b.lines.join('\n').trim();
        // A heading with no words (an open "# " that just arrived, or a bare
        // "#") is drawn as nothing: an empty <hN> is an empty heading to a
        // screen reader.
        node =
          k === 'heading' && words
            ? el('h' + Math.max(1, Math.min(6, b.n + (options.headingOffset | 0))))
            : k === 'list-item' || k === 'heading'
              ? frag()
              : el('p');
        inline(words, node, protos);
      }
      plain ??= plainOf(node);
      if (!fin) prov.push(...(node.nodeType === 11 ? node.childNodes : [node]));
      par.appendChild(node);
    }
    return { kind: k, plain, closed: !!fin };
  }

  function flush() {
    for (const b of st.out) closed.push(render(b, 1));
    st.out = [];
  }

  // rest: the text after the last complete line, at offset pos.
  function run(more) {
    for (const n of prov) n.remove();
    prov = [];
    if (grow) grow.used = 0;
    rest += more;
    for (let nl; (nl = rest.indexOf('\n')) >= 0; rest = rest.slice(nl + 1)) {
      feed(st, rest.slice(0, nl), pos);
      pos += nl + 1;
    }
    if (done) {
      if (rest) feed(st, rest, pos);
      pos += rest.length;
      rest = '';
      end(st);
    }
    flush();
    // The unterminated line runs on a scratch state (open leaf's lines truncated back).
    const M = st.leaf,
      n0 = M && M.lines.length,
      sc = { stack: st.stack.slice(), leaf: M && { ...M }, out: [], p: 1 };
    if (rest) feed(sc, rest, pos);
    open = [...sc.out, sc.leaf]
      .filter(Boolean)
      .map((b) =>
        render(b, 0, M && M.s === b.s && M.k === b.k ? n0 - (b.k === 'table' ? 2 : 0) : 0),
      );
    if (M) M.lines.length = n0;
    if (grow && !grow.used) {
      grow.node.remove();
      grow = null;
    }
  }

  // A text not extending the previous one (a snapshot) re-renders from scratch.
  function update(full) {
    full = String(full);
    if (full === text) return;
    if (done || full.slice(0, text.length) !== text) reset();
    const more = full.slice(text.length);
    run(more, (text = full));
  }

  function append(delta) {
    if (done) return update(text + delta);
    text += delta;
    run(String(delta));
  }

  function finish() {
    if (!done) run('', (done = true));
  }

  reset();
  return { update, append, finish, blocks: (from = 0) => closed.slice(from).concat(open) };
}
