// Front-end of the local Slack demo. It talks only to the fake Slack server:
// GET /ui/state, SSE /ui/stream and POST /ui/{message,command,shortcut,open,stop,action,archive,restart}.
// No framework: all client state lives in `ui`, and every change re-renders the panes from scratch
// (the demo holds a few hundred messages at most, so this stays fast and keeps the code simple).

// biome-ignore format: one emoji per line would only make this table longer to read
const EMOJI = {
  eyes: '👀', hourglass_flowing_sand: '⏳', hourglass: '⌛', white_check_mark: '✅', heavy_check_mark: '✔️',
  warning: '⚠️', x: '❌', wave: '👋', robot_face: '🤖', thumbsup: '👍', '+1': '👍', thumbsdown: '👎',
  '-1': '👎', tada: '🎉', rocket: '🚀', bulb: '💡', memo: '📝', thinking_face: '🤔', smile: '😄',
  slightly_smiling_face: '🙂', heart: '❤️', fire: '🔥', speech_balloon: '💬', arrows_counterclockwise: '🔄',
  wastebasket: '🗑️', no_entry: '⛔', information_source: 'ℹ️', sparkles: '✨', broom: '🧹', octagonal_sign: '🛑',
  scissors: '✂️', leftwards_arrow_with_hook: '↩️',
};
const OP_LABELS = {
  createSession: 'create session',
  sendMessage: 'send message',
  listSessions: 'list sessions',
  deleteSession: 'delete session',
  other: 'other',
};
const AVATAR_COLORS = [
  '#e8912d',
  '#2bac76',
  '#1264a3',
  '#e01e5a',
  '#9f5f00',
  '#0b6e6e',
  '#5b3fa8',
  '#c2410c',
];
const SAFE_URL = /^(https?:|mailto:)/i;
const SYSTEM_SUBTYPES = new Set(['channel_join', 'channel_leave', 'channel_archive', 'channel_topic']);
const GROUP_WINDOW_MS = 5 * 60 * 1000; // Slack folds consecutive messages of one author within ~5 min
// The emulator echoes what it is sent, so a Markdown table in a prompt comes back in the answer, which the
// bot posts as a Slack table block.
const TABLE_SAMPLE = [
  'Compare the regions:',
  '| Region | Users | p95 latency |',
  '|:--|--:|--:|',
  '| EU | 1,204 | 87 ms |',
  '| US | 2,311 | 102 ms |',
  '| APAC | 938 | 141 ms |',
].join('\n');
const PH = '\uE000'; // private-use char delimiting already-rendered fragments while formatting mrkdwn

const ui = {
  data: null, // last /ui/state payload
  channelId: null,
  thread: null, // ts of the thread parent open in the thread pane (always in ui.channelId)
  dismissed: new Set(), // ephemeral ids hidden client-side
  traffic: new Map(), // TrafficEntry by id
  lastSeen: {}, // channelId -> newest ts seen; drives bold "unread" sidebar entries
  drafts: {}, // unsent main-composer text per channel
  listSig: { main: '', thread: '' }, // what each list showed last time, to decide on auto-scroll
  pinned: { main: true, thread: true }, // whether each list was scrolled to its end before the last change
  menu: null, // { channel, ts } while the "more actions" menu is open
  feedback: new Map(), // message ts -> 'positive' | 'negative' clicked on this page
};

/* ---------- small helpers ---------- */

const $ = (id) => document.getElementById(id);
const escText = (s) =>
  String(s ?? '').replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]);
const escAttr = (s) => escText(s).replace(/"/g, '&quot;').replace(/'/g, '&#39;');
// Slack escapes exactly & < > in message text. Decode once; &amp; last so "&amp;lt;" stays "&lt;".
const decode = (s) =>
  String(s ?? '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
const pad = (n) => String(n).padStart(2, '0');
const tsDate = (ts) => new Date(Number.parseFloat(ts) * 1000);
const hhmm = (d) => `${pad(d.getHours())}:${pad(d.getMinutes())}`;
const emoji = (name) => EMOJI[name] ?? `:${name}:`;
// Each emoji in its own element: it is drawn from an emoji font, whatever font the text around it uses.
const emojiHtml = (name) => `<span class="emoji" data-name="${escAttr(name)}">${EMOJI[name]}</span>`;
const emojify = (html) => html.replace(/:([a-z0-9_+-]+):/g, (m, name) => (EMOJI[name] ? emojiHtml(name) : m));
const plain = (s) => emojify(escText(s)).replace(/\n/g, '<br>');
const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

// Tiny DOM builder: h('span.cls1.cls2', { attr: value, text, html }?, ...children).
// Falsy children are skipped; `html` is only ever fed strings from the escaping renderers below.
function h(sel, ...rest) {
  const [tag, ...classes] = sel.split('.');
  const el = document.createElement(tag);
  if (classes.length) el.className = classes.join(' ');
  const props = rest[0]?.constructor === Object ? rest.shift() : {};
  for (const [k, v] of Object.entries(props)) {
    if (v == null || v === false) continue;
    if (k === 'text') el.textContent = v;
    else if (k === 'html') el.innerHTML = v;
    else if (k === 'class') el.classList.add(...String(v).split(' ').filter(Boolean));
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of rest.flat()) if (c != null && c !== false) el.append(c);
  return el;
}
const classes = (...names) => names.filter(Boolean).join(' ');

function userName(id) {
  const d = ui.data;
  if (!id) return 'unknown';
  if (id === d.bot.userId) return d.bot.name;
  const u = d.users?.[id];
  return u ? u.realName || u.name : id;
}
const channelById = (id) => ui.data?.channels.find((c) => c.id === id);
const currentChannel = () => channelById(ui.channelId);
const botWho = () => ({ id: ui.data.bot.userId, name: ui.data.bot.name, isBot: true });
const author = (m) =>
  m.bot_id || (m.user && m.user === ui.data.bot.userId)
    ? botWho()
    : { id: m.user ?? 'unknown', name: userName(m.user), isBot: false };

function avatar(who, size = '') {
  let hash = 0;
  for (const ch of String(who.id)) hash = (hash * 31 + ch.charCodeAt(0)) >>> 0;
  const el = h('div.avatar', { class: size, 'aria-hidden': 'true' }, (who.name[0] ?? '?').toUpperCase());
  el.style.background = who.isBot ? '#4a154b' : AVATAR_COLORS[hash % AVATAR_COLORS.length];
  return el;
}
const appBadge = () => h('span.app-badge', 'APP');

// Small stroke icons drawn inline, so the UI chrome does not depend on an emoji font being installed.
const ICONS = {
  thread: 'M3 4.5h14v9H8.5L5 16.5v-3H3z',
  eye: 'M1.5 10Q10 1 18.5 10Q10 19 1.5 10zM12.5 10a2.5 2.5 0 1 1-5 0a2.5 2.5 0 1 1 5 0z',
  trash: 'M3.5 5.5h13M8 5.5v-2h4v2M5 5.5l1 11h8l1-11',
  archive: 'M2.5 4h15v3.5h-15zM4 7.5v8.5h12v-8.5M8 10.5h4',
};
function icon(name) {
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  const path = document.createElementNS('http://www.w3.org/2000/svg', 'path');
  path.setAttribute('d', ICONS[name]);
  svg.setAttribute('viewBox', '0 0 20 20');
  svg.setAttribute('class', 'icon');
  svg.setAttribute('aria-hidden', 'true');
  svg.append(path);
  return svg;
}

/* ---------- Slack mrkdwn → HTML (every fragment escaped) ---------- */

function linkHtml(url, label) {
  if (!SAFE_URL.test(url)) return escText(label);
  const inPage = threadLinkHtml(url, label);
  if (inPage) return inPage;
  return `<a href="${escAttr(url)}" target="_blank" rel="noopener noreferrer">${escText(label)}</a>`;
}

// A permalink to a thread of this workspace (as `/agent sessions` lists them) opens that thread on this page,
// and names it: every listed link says "thread", so the name is what tells two conversations apart.
const THREAD_URL = /^https:\/\/[^/]+\.slack\.com\/archives\/([A-Z0-9]+)\/p(\d{10})(\d{6})$/;
function threadLinkHtml(url, label) {
  const m = THREAD_URL.exec(url);
  if (!m) return undefined;
  const [, channel, seconds, micros] = m;
  const ts = `${seconds}.${micros}`;
  const root = (ui.data.messages?.[channel] ?? []).find((msg) => msg.ts === ts);
  if (!root) return undefined;
  const name = sessionOf(channel, ts)?.title || excerpt(bodyText(root), 40);
  return (
    `<a href="#" class="thread-link" data-action="open-linked-thread" data-testid="thread-link" ` +
    `data-channel="${escAttr(channel)}" data-thread="${escAttr(ts)}" title="${escAttr(name)}">` +
    `${escText(label)}</a> <span class="thread-link-name">(${escText(name)})</span>`
  );
}

/** The first `max` characters of a text, cut at a word, with `…` when cut. */
function excerpt(text, max) {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  return `${cut.slice(0, cut.lastIndexOf(' ') > 0 ? cut.lastIndexOf(' ') : max)}…`;
}
const mentionHtml = (label, kind = '') => `<span class="mention ${kind}">${escText(label)}</span>`;
function userMention(id) {
  const kind = id === ui.data.me.id ? 'me' : id === ui.data.bot.userId ? 'bot' : '';
  return mentionHtml(`@${userName(id)}`, kind);
}

// One `<…>` Slack entity: link, user/channel mention or special mention.
function slackEntity(inner) {
  const bar = inner.indexOf('|');
  const target = bar < 0 ? inner : inner.slice(0, bar);
  const label = bar < 0 ? undefined : decode(inner.slice(bar + 1));
  if (target.startsWith('@')) return userMention(target.slice(1));
  if (target.startsWith('#')) {
    return mentionHtml(`#${label ?? channelById(target.slice(1))?.name ?? target.slice(1)}`, 'chan');
  }
  if (target.startsWith('!')) {
    const cmd = target.slice(1);
    if (cmd.startsWith('date^')) return slackDate(cmd, label ?? '');
    if (cmd.startsWith('subteam^')) return mentionHtml(label ?? '@group');
    return mentionHtml(`@${cmd.split('^')[0]}`, 'me'); // <!here>, <!channel>, <!everyone>
  }
  const url = decode(target);
  if (SAFE_URL.test(url)) return linkHtml(url, label ?? url.replace(/^mailto:/i, ''));
  return escText(decode(`<${inner}>`)); // not an entity after all: show it literally
}

/* ---------- Slack's <!date^…> tokens, in the reader's local time ---------- */

// biome-ignore format: a table
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const DAY_MS = 24 * 60 * 60 * 1000;

function ordinal(n) {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : ({ 1: 'st', 2: 'nd', 3: 'rd' }[n % 10] ?? 'th');
  return `${n}${suffix}`;
}

/** today / yesterday / tomorrow by the reader's calendar, or undefined. */
function relativeDay(d) {
  const midnight = (x) => new Date(x.getFullYear(), x.getMonth(), x.getDate()).getTime();
  const days = Math.round((midnight(d) - midnight(new Date())) / DAY_MS);
  return { '-1': 'yesterday', 0: 'today', 1: 'tomorrow' }[days];
}

function ago(d) {
  const seconds = Math.round((d.getTime() - Date.now()) / 1000);
  const units = [
    ['year', 365 * 86400],
    ['month', 30 * 86400],
    ['day', 86400],
    ['hour', 3600],
    ['minute', 60],
  ];
  const format = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
  for (const [unit, size] of units)
    if (Math.abs(seconds) >= size) return format.format(Math.trunc(seconds / size), unit);
  return format.format(seconds, 'second');
}

// The formats of https://docs.slack.dev/messaging/formatting-message-text#date-formatting. Times follow
// the page's own clock (24-hour), as Slack follows the reader's clock preference.
function dateToken(d, name) {
  const y = d.getFullYear();
  const month = MONTHS[d.getMonth()];
  const day = d.getDate();
  const long = `${WEEKDAYS[d.getDay()]}, ${month} ${ordinal(day)}, ${y}`;
  const date = `${month} ${ordinal(day)}, ${y}`;
  const short = `${month.slice(0, 3)} ${day}, ${y}`;
  const relative = relativeDay(d);
  switch (name) {
    case 'date_num':
      return `${y}-${pad(d.getMonth() + 1)}-${pad(day)}`;
    case 'date_slash':
      return `${pad(day)}/${pad(d.getMonth() + 1)}/${y}`;
    case 'date_long':
      return long;
    case 'date_long_full':
      return `${month} ${day}, ${y}`;
    case 'date_long_pretty':
      return relative ?? long;
    case 'date':
      return date;
    case 'date_pretty':
      return relative ?? date;
    case 'date_short':
      return short;
    case 'date_short_pretty':
      return relative ?? short;
    case 'day_divider_pretty':
      return relative ?? (y === new Date().getFullYear() ? long.replace(`, ${y}`, '') : long);
    case 'time':
      return hhmm(d);
    case 'time_secs':
      return `${hhmm(d)}:${pad(d.getSeconds())}`;
    case 'ago':
      return ago(d);
    default:
      return undefined;
  }
}

/** `date^EPOCH^FORMAT[^LINK]` with its fallback; as in Slack, the fallback shows when it cannot be read. */
function slackDate(cmd, fallback) {
  const [, epoch, format, link] = cmd.split('^');
  if (!/^-?\d+$/.test(epoch ?? '') || !format) return escText(fallback);
  const d = new Date(Number(epoch) * 1000);
  let unknown = false;
  const text = format.replace(/\{(\w+)\}/g, (token, name, offset) => {
    const value = dateToken(d, name);
    if (value === undefined) unknown = true;
    // A relative day that starts the text is capitalised ("Today 14:05").
    return offset === 0 && value ? value[0].toUpperCase() + value.slice(1) : (value ?? token);
  });
  if (unknown) return escText(fallback);
  const shown = link ? linkHtml(decode(link), decode(text)) : escText(decode(text));
  return `<time class="slack-date" datetime="${escAttr(d.toISOString())}" title="${escAttr(d.toLocaleString())}">${shown}</time>`;
}

const INLINE_TOKEN = /`([^`\n]+)`|<([^<>\n]+)>|\b(https?:\/\/[^\s<>]*[^\s<>.,;:!?)\]'"])/g;

function inlineMrkdwn(line) {
  const saved = [];
  const keep = (html) => `${PH}${saved.push(html) - 1}${PH}`;
  // Code spans, entities and bare URLs first, so that formatting never reaches inside them.
  let s = line.replace(INLINE_TOKEN, (_, code, entity, url) => {
    if (code !== undefined) return keep(`<code>${escText(decode(code))}</code>`);
    if (entity !== undefined) return keep(slackEntity(entity));
    return keep(linkHtml(decode(url), decode(url)));
  });
  // Slack only formats when the markers hug non-space text and sit at word boundaries.
  s = escText(decode(s))
    .replace(/(^|[^\w*])\*([^*\s](?:[^*\n]*[^*\s])?)\*(?![\w*])/g, '$1<b>$2</b>')
    .replace(/(^|[^\w_])_([^_\s](?:[^_\n]*[^_\s])?)_(?![\w_])/g, '$1<i>$2</i>')
    .replace(/(^|[^\w~])~([^~\s](?:[^~\n]*[^~\s])?)~(?![\w~])/g, '$1<s>$2</s>');
  return emojify(s).replace(new RegExp(`${PH}(\\d+)${PH}`, 'g'), (_, i) => saved[Number(i)]);
}

function mrkdwnLines(text) {
  const groups = []; // runs of quoted / unquoted lines
  for (const line of text.split('\n')) {
    const m = /^(?:&gt;|>) ?(.*)$/.exec(line);
    const html = inlineMrkdwn(m ? m[1] : line);
    const last = groups.at(-1);
    if (last && last.quote === !!m) last.lines.push(html);
    else groups.push({ quote: !!m, lines: [html] });
  }
  const join = (g) => (g.quote ? `<blockquote>${g.lines.join('<br>')}</blockquote>` : g.lines.join('<br>'));
  return groups.map(join).join('');
}

function mrkdwn(src) {
  const parts = String(src ?? '').split('```');
  // An odd number of fences leaves the last one unclosed: keep it as literal text.
  if (parts.length % 2 === 0) parts.splice(-2, 2, `${parts.at(-2)}\`\`\`${parts.at(-1)}`);
  const html = parts.map((p, i) => {
    if (i % 2 === 1) {
      const body = p
        .replace(/^\n/, '')
        .replace(/<([^<>\n]+)>|[^<]+|</g, (m, ent) =>
          ent !== undefined ? slackEntity(ent) : escText(decode(m)),
        );
      return `<pre class="code-block">${body}</pre>`;
    }
    let t = p;
    if (i > 0) t = t.replace(/^\n/, ''); // the newline right after a closing fence
    if (i < parts.length - 1) t = t.replace(/\n$/, ''); // the newline right before an opening fence
    return t ? `<div class="mrkdwn">${mrkdwnLines(t)}</div>` : '';
  });
  return html.join('');
}

/* ---------- Markdown blocks via marked, with a locked-down renderer ---------- */

const markedRenderer = {
  // Raw HTML inside markdown is shown as text, never interpreted.
  html({ text }) {
    return escText(text);
  },
  link({ href, title, tokens }) {
    const inner = this.parser.parseInline(tokens);
    if (!SAFE_URL.test(String(href ?? '').trim())) return inner;
    const t = title ? ` title="${escAttr(title)}"` : '';
    return `<a href="${escAttr(href)}"${t} target="_blank" rel="noopener noreferrer">${inner}</a>`;
  },
  // Images become links: the demo never loads remote content on its own.
  image({ href, text }) {
    return linkHtml(String(href ?? ''), `[image] ${text || href}`);
  },
};

// Imported dynamically so that a missing vendor file degrades markdown blocks, not the whole page.
let marked = null;
try {
  ({ marked } = await import('/vendor/marked.esm.js'));
  marked.use({ gfm: true, breaks: false, renderer: markedRenderer });
} catch (err) {
  console.warn('marked could not be loaded; markdown blocks are shown as plain text', err);
}

function markdown(text) {
  // Markdown blocks may still carry Slack user mentions; make them readable before parsing.
  const src = String(text ?? '').replace(/<@(\w+)(?:\|[^>]*)?>/g, (_, id) => `@${userName(id)}`);
  return marked ? marked.parse(src, { async: false }) : `<p>${plain(src)}</p>`;
}

/* ---------- Block Kit ---------- */

const textObj = (t) => (!t ? '' : t.type === 'mrkdwn' ? mrkdwn(t.text) : plain(t.text));

function styled(html, style = {}) {
  let out = html;
  if (style.code) out = `<code>${out}</code>`;
  if (style.bold) out = `<b>${out}</b>`;
  if (style.italic) out = `<i>${out}</i>`;
  if (style.strike) out = `<s>${out}</s>`;
  return out;
}

// rich_text is what Slack clients send for typed messages; render its common element types.
function richEl(el) {
  const kids = (xs) => (xs ?? []).map(richEl).join('');
  switch (el?.type) {
    case 'rich_text_section':
      return `<div>${kids(el.elements)}</div>`;
    case 'rich_text_list': {
      const tag = el.style === 'ordered' ? 'ol' : 'ul';
      return `<${tag}>${(el.elements ?? []).map((s) => `<li>${kids(s.elements)}</li>`).join('')}</${tag}>`;
    }
    case 'rich_text_preformatted':
      return `<pre class="code-block">${kids(el.elements)}</pre>`;
    case 'rich_text_quote':
      return `<blockquote>${kids(el.elements)}</blockquote>`;
    case 'text':
      return styled(plain(el.text), el.style);
    case 'link':
      return styled(linkHtml(String(el.url ?? ''), el.text || el.url || ''), el.style);
    case 'user':
      return userMention(el.user_id);
    case 'channel':
      return mentionHtml(`#${channelById(el.channel_id)?.name ?? el.channel_id}`, 'chan');
    case 'broadcast':
      return mentionHtml(`@${el.range}`, 'me');
    case 'emoji':
      return el.unicode
        ? `<span class="emoji">${escText(String.fromCodePoint(...el.unicode.split('-').map((x) => Number.parseInt(x, 16) || 0xfffd)))}</span>`
        : EMOJI[el.name]
          ? emojiHtml(el.name)
          : escText(emoji(el.name));
    default:
      return escText(el?.text ?? '');
  }
}

/* ---------- interactive elements: a click becomes a block_actions request to the bot ---------- */

// What each element's click sends: its action_id (and, for feedback buttons, which of the two).
function actionAttrs(el, extra = {}) {
  const attrs = { 'data-action': 'block-action', 'data-action-id': el.action_id ?? '', ...extra };
  return Object.entries(attrs)
    .map(([k, v]) => ` ${k}="${escAttr(v)}"`)
    .join('');
}

function buttonHtml(el) {
  const style = el.style === 'primary' || el.style === 'danger' ? ` ${el.style}` : '';
  const label = plain(el.text?.text ?? '');
  // A link button opens its page (Slack also tells the app, which this bot does not need).
  if (el.url && SAFE_URL.test(el.url))
    return `<a class="blk-button${style}" href="${escAttr(el.url)}" target="_blank" rel="noopener noreferrer">${label}</a>`;
  return `<button type="button" class="blk-button${style}"${actionAttrs(el, { 'data-testid': 'block-button' })}>${label}</button>`;
}

const THUMB_PATH =
  'M6.5 9.5v7.5h-3v-7.5zM6.5 9.5l3-6.5c1.6 0 2.6 1.1 2.2 2.9l-.5 2.1h4.1c1 0 1.8.9 1.6 1.9l-1.1 5.8c-.2.8-.8 1.3-1.6 1.3H6.5';

// Slack's thumbs up / down under an answer; the one clicked stays marked (on this page only).
function feedbackHtml(el, m) {
  const chosen = ui.feedback.get(m?.ts);
  const one = (which) => {
    const b = el[`${which}_button`];
    if (!b) return '';
    const label = b.text?.text ?? which;
    return `<button type="button" class="feedback-btn ${which}"${actionAttrs(el, {
      'data-feedback': which,
      'data-testid': 'feedback-button',
      title: label,
      'aria-label': b.accessibility_label ?? label,
      'aria-pressed': String(chosen === which),
    })}><svg viewBox="0 0 20 20" class="icon" aria-hidden="true"><path d="${THUMB_PATH}"/></svg></button>`;
  };
  return `<span class="feedback">${one('positive')}${one('negative')}</span>`;
}

function elementHtml(el, m) {
  switch (el?.type) {
    case 'button':
      return buttonHtml(el);
    case 'feedback_buttons':
      return feedbackHtml(el, m);
    case 'icon_button':
      return `<button type="button" class="blk-button icon"${actionAttrs(el, { 'data-testid': 'block-button' })}>${plain(el.text?.text ?? el.icon ?? '')}</button>`;
    default:
      // Selects, date pickers and the like: not used by this bot; shown so that nothing silently vanishes.
      return `<span class="blk-unsupported">[${escText(el?.type ?? 'element')}]</span>`;
  }
}

/* ---------- table blocks ---------- */

function tableCellHtml(cell) {
  if (cell?.type === 'rich_text') return (cell.elements ?? []).map(richEl).join('');
  return plain(cell?.text ?? '');
}

// The first row is the header, as the bot writes it from the Markdown table's header row.
function tableHtml(b) {
  const settings = Array.isArray(b.column_settings) ? b.column_settings : [];
  const attrs = (i) => {
    const align = settings[i]?.align;
    const cls = settings[i]?.is_wrapped ? ' class="wrap"' : '';
    return `${cls}${['left', 'center', 'right'].includes(align) ? ` style="text-align:${align}"` : ''}`;
  };
  const row = (cells, tag) =>
    `<tr>${(cells ?? []).map((c, i) => `<${tag}${attrs(i)}>${tableCellHtml(c)}</${tag}>`).join('')}</tr>`;
  const [head, ...body] = Array.isArray(b.rows) ? b.rows : [];
  return `<div class="blk-table-wrap"><table class="blk-table" data-testid="table-block"><thead>${row(head, 'th')}</thead><tbody>${body.map((r) => row(r, 'td')).join('')}</tbody></table></div>`;
}

function contextEl(el) {
  if (el.type !== 'image') return `<span>${textObj(el)}</span>`;
  if (!SAFE_URL.test(el.image_url ?? '')) return '';
  return `<img class="ctx-img" src="${escAttr(el.image_url)}" alt="${escAttr(el.alt_text ?? '')}">`;
}

function renderBlock(b, m) {
  switch (b?.type) {
    case 'markdown':
      return `<div class="blk-markdown">${markdown(b.text)}</div>`;
    case 'section': {
      const fields = (b.fields ?? []).map((f) => `<div>${textObj(f)}</div>`).join('');
      const accessory = b.accessory ? `<div class="blk-accessory">${elementHtml(b.accessory, m)}</div>` : '';
      return `<div class="blk-section${accessory && ' with-accessory'}"><div>${textObj(b.text)}${fields && `<div class="blk-fields">${fields}</div>`}</div>${accessory}</div>`;
    }
    case 'actions':
      return `<div class="blk-actions">${(b.elements ?? []).map((el) => elementHtml(el, m)).join('')}</div>`;
    case 'context_actions':
      return `<div class="blk-context-actions">${(b.elements ?? []).map((el) => elementHtml(el, m)).join('')}</div>`;
    case 'table':
      return tableHtml(b);
    case 'context':
      return `<div class="blk-context">${(b.elements ?? []).map(contextEl).join('')}</div>`;
    case 'header':
      return `<div class="blk-header">${textObj(b.text)}</div>`;
    case 'divider':
      return '<hr class="blk-divider">';
    case 'rich_text':
      return `<div class="blk-rich">${(b.elements ?? []).map(richEl).join('')}</div>`;
    default:
      return '';
  }
}

// Blocks win over `text` (which is only the notification fallback), as in Slack.
function bodyHtml(m) {
  try {
    if (Array.isArray(m.blocks) && m.blocks.length) return m.blocks.map((b) => renderBlock(b, m)).join('');
    return mrkdwn(m.text ?? '');
  } catch (err) {
    console.error('could not render message', m, err);
    return plain(m.text ?? '');
  }
}

/* ---------- message lists ---------- */

function splitThreads(msgs) {
  const top = [];
  const replies = new Map();
  for (const m of msgs) {
    if (!m.thread_ts || m.thread_ts === m.ts) top.push(m);
    else replies.set(m.thread_ts, [...(replies.get(m.thread_ts) ?? []), m]);
  }
  return { top, replies };
}

const ephemeralsFor = (channel) =>
  (ui.data.ephemerals ?? []).filter((e) => e.channel === channel && !ui.dismissed.has(e.id));

// Messages and ephemerals merged in time order.
function timeline(msgs, ephs) {
  const items = [
    ...msgs.map((m) => ({ at: tsDate(m.ts).getTime(), msg: m })),
    ...ephs.map((e) => ({ at: e.at, eph: e })),
  ];
  return items.sort((a, b) => a.at - b.at);
}
const timelineSig = (key, items) =>
  `${key}|${items.length}|${items.at(-1)?.msg?.ts ?? items.at(-1)?.eph?.id}`;

function reactionsEl(reactions) {
  if (!reactions?.length) return null;
  const pill = (r) => {
    const title = `${(r.users ?? []).map(userName).join(', ')} reacted with :${r.name}:`;
    const cls = r.users?.includes(ui.data.me.id) ? 'mine' : '';
    return h(
      'span.reaction',
      { class: cls, 'data-testid': 'reaction', 'data-name': r.name, title },
      h('span.reaction-emoji.emoji', emoji(r.name)),
      h('span.reaction-count', String(r.count ?? r.users?.length ?? 1)),
    );
  };
  return h('div.reactions', reactions.map(pill));
}

/** A thread's agent session as Slack shows it (status, title, stop button), if it has one. */
const sessionOf = (channel, ts) => ui.data.sessions?.[`${channel}:${ts}`];
const SESSION_LABELS = { processing: 'Working…', active: 'Active', suspended: 'Suspended', closed: 'Closed' };

// Slack's stop button, shown while the app works on an agent session; pressing it tells the app.
function stopButton(threadTs, where) {
  return h(
    'button.stop-btn',
    {
      type: 'button',
      'data-action': 'stop-session',
      'data-thread': threadTs,
      'data-testid': where === 'thread' ? 'thread-stop' : 'stop-button',
      title: 'Stop: the app stops working on this conversation',
    },
    h('span.stop-square', { 'aria-hidden': 'true' }),
    'Stop',
  );
}

function threadSummary(replies, count, title) {
  const people = [...new Map(replies.map((r) => [author(r).id, author(r)])).values()].slice(0, 4);
  const last = replies.at(-1);
  return h(
    'div.thread-summary',
    // The Messages tab lists its conversations by their titles.
    title && h('span.thread-session-title', { 'data-testid': 'conversation-title' }, title),
    people.map((w) => avatar(w, 'tiny')),
    h(
      'button.link',
      { type: 'button', 'data-testid': 'open-thread', 'data-action': 'open-thread' },
      plural(count, 'reply', 'replies'),
    ),
    last && h('span.thread-last', `Last reply ${hhmm(tsDate(last.ts))}`),
  );
}

function actionBar(pane) {
  const btn = (testid, action, label, icon) =>
    h(
      'button.act',
      { type: 'button', 'data-testid': testid, 'data-action': action, title: label, 'aria-label': label },
      icon,
    );
  return h(
    'div.msg-actions',
    pane === 'main' && btn('reply-in-thread', 'reply', 'Reply in thread', icon('thread')),
    btn('message-actions', 'more', 'More actions', '⋯'),
  );
}

function meta(who, d) {
  return h(
    'div.msg-meta',
    h('span.msg-author', who.name),
    who.isBot && appBadge(),
    h('time.msg-time', { title: d.toLocaleString() }, hhmm(d)),
  );
}

function messageEl(m, { pane, who, compact = false, replies = [] }) {
  const d = tsDate(m.ts);
  const count = replies.length || m.reply_count || 0;
  const status = pane === 'main' && ui.data.assistant?.[`${ui.channelId}:${m.ts}`]?.status;
  const session = pane === 'main' ? sessionOf(ui.channelId, m.ts) : undefined;
  // An agent view session has no status line of its own: the page says the app is at work.
  const working = status || (session?.status === 'processing' && 'is working on an answer…');
  const title = currentChannel()?.type === 'im' ? session?.title : undefined;
  const cls = classes(compact && 'compact', SYSTEM_SUBTYPES.has(m.subtype) && 'system');
  return h(
    'div.msg',
    { class: cls, 'data-testid': 'message', 'data-ts': m.ts, 'data-pane': pane },
    h('div.msg-gutter', compact ? h('time.hover-time', hhmm(d)) : avatar(who)),
    h(
      'div.msg-content',
      !compact && meta(who, d),
      h('div.message-body', { html: bodyHtml(m) }),
      m.edited && h('span.edited', '(edited)'),
      reactionsEl(m.reactions),
      pane === 'main' && count > 0 && threadSummary(replies, count, title),
      working &&
        h(
          'div.assistant-inline',
          { 'data-testid': 'assistant-status-inline' },
          h('span.typing', { 'aria-hidden': 'true' }, h('i'), h('i'), h('i')),
          h('span', `${ui.data.bot.name} ${working}`),
          session?.stopButtonVisible && stopButton(m.ts, 'main'),
        ),
    ),
    actionBar(pane),
  );
}

function ephemeralEl(e) {
  return h(
    'div.msg.ephemeral',
    { 'data-testid': 'ephemeral', 'data-id': e.id },
    h('div.msg-gutter', avatar(botWho())),
    h(
      'div.msg-content',
      h('div.ephemeral-label', icon('eye'), ' Only visible to you'),
      meta(botWho(), new Date(e.at)),
      h('div.message-body', { html: bodyHtml(e) }),
      h(
        'button.link.dismiss',
        { type: 'button', 'data-action': 'dismiss', 'data-testid': 'ephemeral-dismiss' },
        'Dismiss',
      ),
    ),
  );
}

function buildItems(items, pane, replies) {
  const nodes = [];
  let prev = null;
  for (const it of items) {
    if (it.eph) {
      nodes.push(ephemeralEl(it.eph));
      prev = null;
      continue;
    }
    const m = it.msg;
    const who = author(m);
    const rs = replies?.get(m.ts) ?? [];
    const compact = prev?.who === who.id && it.at - prev.at < GROUP_WINDOW_MS && !prev.thread && !m.subtype;
    nodes.push(messageEl(m, { pane, who, compact, replies: rs }));
    prev = { who: who.id, at: it.at, thread: rs.length > 0 || m.reply_count > 0 };
  }
  return nodes;
}

// Replace a list's content; jump to the bottom when something new arrived (or when the reader was
// already there), otherwise keep the reader where they were.
function fillList(list, nodes, key, sig) {
  const prevTop = list.scrollTop;
  list.replaceChildren(...nodes);
  list.scrollTop = sig !== ui.listSig[key] || ui.pinned[key] ? list.scrollHeight : prevTop;
  ui.listSig[key] = sig;
  ui.pinned[key] = atEnd(list);
}

const atEnd = (list) => list.scrollHeight - list.scrollTop - list.clientHeight < 40;

/** A list shown to its end stays so when the space around it changes (composer, footer, window). */
function keepPinned(list, key) {
  list.addEventListener('scroll', () => {
    ui.pinned[key] = atEnd(list);
  });
  new ResizeObserver(() => {
    if (ui.pinned[key]) list.scrollTop = list.scrollHeight;
  }).observe(list);
}

/* ---------- panes ---------- */

function sidebarItem(c) {
  const d = ui.data;
  const newest = (d.messages[c.id] ?? []).at(-1)?.ts ?? '0';
  if (ui.lastSeen[c.id] === undefined || c.id === ui.channelId) ui.lastSeen[c.id] = newest;
  const unread = Number(newest) > Number(ui.lastSeen[c.id]);
  const selected = c.id === ui.channelId;
  const isIm = c.type === 'im';
  const label = isIm ? d.bot.name : c.name;
  return h(
    'button.sb-item',
    {
      type: 'button',
      class: classes(selected && 'selected', c.archived && 'archived', unread && 'unread'),
      'data-testid': 'channel-link',
      'data-channel-id': c.id,
      'data-channel-name': label,
      'aria-current': selected && 'page',
    },
    isIm ? avatar(botWho(), 'mini') : h('span.sb-hash', '#'),
    h('span.sb-name', label),
    // An icon, not a word: the channel pane says it once, in its footer.
    c.archived &&
      h('span.sb-archived', { title: 'Archived channel', 'data-testid': 'archived-icon' }, icon('archive')),
  );
}

function renderSidebar() {
  const { team, me, channels } = ui.data;
  $('team-name').textContent = team.name;
  $('search-team').textContent = team.name;
  $('me-name').textContent = userName(me.id);
  $('channel-list').replaceChildren(...channels.filter((c) => c.type !== 'im').map(sidebarItem));
  $('dm-list').replaceChildren(...channels.filter((c) => c.type === 'im').map(sidebarItem));
}

function renderHeader(c) {
  $('archive-btn').hidden = !c || c.type === 'im' || c.archived;
  if (!c) return $('channel-title').replaceChildren('No channels');
  const bot = ui.data.bot.name;
  $('channel-title').replaceChildren(
    ...(c.type === 'im' ? [avatar(botWho(), 'small'), bot, appBadge()] : [h('span.hash', '#'), c.name]),
  );
  document.title = `${c.type === 'im' ? bot : `#${c.name}`} · ${ui.data.team.name}`;
}

function channelIntro(c) {
  const bot = ui.data.bot.name;
  return c.type === 'im'
    ? h(
        'div.channel-intro',
        h('div.intro-title', bot),
        h('div.intro-text', `This is your direct message with ${bot}. Just type — no mention needed.`),
      )
    : h(
        'div.channel-intro',
        h('div.intro-title', `# ${c.name}`),
        h(
          'div.intro-text',
          `This is the very beginning of #${c.name}. Mention @agent to start a thread with the bot.`,
        ),
      );
}

function renderMain(c) {
  const list = $('message-list');
  if (!c) return list.replaceChildren(h('div.channel-intro', 'No channels yet.'));
  const { top, replies } = splitThreads(ui.data.messages[c.id] ?? []);
  // A note aimed at a thread stays in that thread, open or closed (as in Slack); only one whose thread has no
  // replies, so no thread to open, shows here.
  const items = timeline(
    top,
    ephemeralsFor(c.id).filter((e) => !e.threadTs || !replies.has(e.threadTs)),
  );
  fillList(list, [channelIntro(c), ...buildItems(items, 'main', replies)], 'main', timelineSig(c.id, items));
}

function renderThread(c) {
  const msgs = c ? (ui.data.messages[c.id] ?? []) : [];
  const parent = ui.thread && msgs.find((m) => m.ts === ui.thread);
  $('thread').hidden = !parent;
  if (!parent) {
    ui.thread = null;
    return;
  }
  $('thread-channel').textContent = c.type === 'im' ? ui.data.bot.name : `#${c.name}`;
  const replies = msgs.filter((m) => m.thread_ts === parent.ts && m.ts !== parent.ts);
  const items = timeline(
    replies,
    ephemeralsFor(c.id).filter((e) => e.threadTs === parent.ts),
  );
  const nodes = [
    messageEl(parent, { pane: 'thread', who: author(parent) }),
    replies.length > 0 && h('div.thread-divider', h('span', plural(replies.length, 'reply', 'replies'))),
    ...buildItems(items, 'thread'),
  ];
  fillList($('thread-list'), nodes.filter(Boolean), 'thread', timelineSig(parent.ts, items));

  // The thread's agent session heads the pane as in Slack: its title (agents.sessions.rename) and status.
  const a = ui.data.assistant?.[`${c.id}:${parent.ts}`] ?? {};
  const session = sessionOf(c.id, parent.ts);
  $('thread-title').textContent = session?.title || a.title || 'Thread';
  const badge = $('session-status');
  badge.hidden = !session;
  badge.dataset.status = session?.status ?? '';
  badge.textContent = SESSION_LABELS[session?.status] ?? session?.status ?? '';
  const prompt = (p) =>
    h(
      'button.prompt-chip',
      { type: 'button', 'data-testid': 'assistant-prompt', 'data-message': p.message },
      p.title,
    );
  const working = a.status || (session?.status === 'processing' && 'is working on an answer…');
  $('thread-extra').replaceChildren(
    ...(working
      ? [
          h(
            'div.assistant-status',
            { 'data-testid': 'assistant-status' },
            h('span.typing', { 'aria-hidden': 'true' }, h('i'), h('i'), h('i')),
            h('em', `${ui.data.bot.name} ${working}`),
            session?.stopButtonVisible && stopButton(parent.ts, 'thread'),
          ),
        ]
      : []),
    ...(a.prompts?.length && !c.archived ? [h('div.assistant-prompts', a.prompts.map(prompt))] : []),
  );
}

/** The Messages tab's suggested prompts (set without a thread), shown above the DM composer. */
function renderTabPrompts(c) {
  const tab = c?.type === 'im' ? ui.data.assistant?.[`${c.id}:`] : undefined;
  const box = $('tab-prompts');
  box.hidden = !tab?.prompts?.length;
  if (box.hidden) return box.replaceChildren();
  // The bot heads its prompts with its greeting, which it also posts once: shown once is enough.
  const title = tab.promptsTitle?.trim();
  const posted = (ui.data.messages[c.id] ?? []).some((m) => author(m).isBot && bodyText(m) === title);
  box.replaceChildren(
    ...(title && !posted ? [h('div.tab-prompts-title', { 'data-testid': 'tab-prompts-title' }, title)] : []),
    h(
      'div.assistant-prompts',
      tab.prompts.map((p) =>
        h(
          'button.prompt-chip',
          { type: 'button', 'data-testid': 'tab-prompt', 'data-message': p.message },
          p.title,
        ),
      ),
    ),
  );
}

/** Opening a DM is opening the bot's Messages tab: Slack tells the app (app_home_opened). */
function openedConversation(c) {
  if (c?.type === 'im') post('/ui/open', { channel: c.id }).then(refreshSoon);
}

function renderComposers(c) {
  renderTabPrompts(c);
  const archived = !!c?.archived;
  for (const id of ['composer-input', 'composer-send', 'thread-input', 'thread-send'])
    $(id).disabled = archived || !c;
  // An archived channel has no composer at all (as in Slack): one footer says why.
  $('composer-wrap').hidden = archived;
  $('thread-composer-wrap').hidden = archived;
  $('archived-note').hidden = !archived;
  if (!c) return;
  $('archived-note').replaceChildren(
    ...(archived ? ['You are viewing ', h('b', `#${c.name}`), ', an archived channel.'] : []),
  );
  // In the DM (the Messages tab) everything typed goes to the bot: no mention to teach there.
  const dm = c.type === 'im';
  $('hint-mention').hidden = dm;
  $('hint-table').dataset.insert = `${dm ? '' : `@${ui.data.bot.name} `}${TABLE_SAMPLE}`;
  $('composer-input').placeholder = dm
    ? `Message ${ui.data.bot.name}`
    : `Message #${c.name}: mention @${ui.data.bot.name}`;
}

/** A message's text as shown, for comparing with plain strings. */
function bodyText(m) {
  const el = document.createElement('div');
  el.innerHTML = bodyHtml(m);
  return el.textContent.replace(/\s+/g, ' ').trim();
}

function render() {
  if (!ui.data) return;
  if (!currentChannel()) {
    // First load (or the channel vanished): honour #name / #id in the URL, else the first channel.
    const want = decodeURIComponent(location.hash.slice(1));
    const cs = ui.data.channels;
    const pick =
      (want && cs.find((c) => c.id === want || c.name === want)) ||
      cs.find((c) => c.type === 'channel') ||
      cs[0];
    ui.channelId = pick?.id ?? null;
    ui.thread = null;
    openedConversation(pick);
  }
  const c = currentChannel();
  renderSidebar();
  renderHeader(c);
  // Composers first: the lists then scroll to their end in the space that is left them.
  renderComposers(c);
  renderMain(c);
  renderThread(c);
}

/* ---------- traffic panel ---------- */

function trafficEl(e) {
  const pending = e.state === 'pending';
  const failed = !pending && (e.ok === false || (e.status ?? 0) >= 400);
  const result = pending
    ? h('span.tr-pending', h('span.spinner', { 'aria-hidden': 'true' }), 'pending…')
    : h(
        'span.tr-result',
        h('span.tr-status', String(e.status ?? (failed ? 'error' : '—'))),
        e.durationMs != null && h('span.tr-dur', `${Math.round(e.durationMs)} ms`),
      );
  const d = new Date(e.at);
  return h(
    'div.traffic-entry',
    {
      class: classes(`op-${e.operation}`, pending && 'pending', failed && 'failed'),
      'data-testid': 'traffic-entry',
      'data-operation': e.operation,
      'data-state': e.state,
      'data-id': e.id,
    },
    h(
      'div.tr-row',
      h(
        'span.tr-op',
        e.operation === 'deleteSession' && icon('trash'),
        OP_LABELS[e.operation] ?? e.operation,
      ),
      result,
    ),
    h(
      'div.tr-row.tr-sub',
      h('span.tr-path', `${e.method ?? ''} ${e.path ?? ''}`.trim()),
      h('time', `${hhmm(d)}:${pad(d.getSeconds())}`),
    ),
    e.sessionId && h('div.tr-session', { title: e.sessionId }, `session ${e.sessionId}`),
    e.summary && h('div.tr-summary', e.summary),
  );
}

function renderTraffic() {
  const entries = [...ui.traffic.values()].sort((a, b) => b.at - a.at);
  $('traffic-count').textContent = entries.length ? plural(entries.length, 'call') : '';
  $('traffic-list').replaceChildren(
    ...(entries.length
      ? entries.map(trafficEl)
      : [
          h(
            'div.traffic-empty',
            'No calls yet. Mention @agent in a channel or DM the bot to create a session.',
          ),
        ]),
  );
}

let trafficFrame = 0;
function scheduleTraffic() {
  if (trafficFrame) return; // one repaint per frame, however many events arrived
  trafficFrame = requestAnimationFrame(() => {
    trafficFrame = 0;
    renderTraffic();
  });
}

/* ---------- server I/O ---------- */

function toast(text, kind = 'error') {
  // Notes about the demo's own controls show by those controls, clear of the conversation.
  const box = $(kind === 'error' ? 'toasts' : 'notes');
  if ([...box.children].some((t) => t.textContent === text)) return; // don't stack identical errors
  const role = kind === 'error' ? 'alert' : 'status';
  const el = h('div.toast', { class: kind, role, 'data-testid': 'toast' }, text);
  box.append(el);
  setTimeout(() => el.remove(), kind === 'error' ? 6000 : 10000);
}

async function post(path, body) {
  const what = path.replace('/ui/', '');
  try {
    const init = {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    };
    const res = await fetch(path, init);
    const json = await res.json().catch(() => ({ ok: false, error: `HTTP ${res.status}` }));
    if (!json.ok) toast(`${what} failed: ${json.error ?? `HTTP ${res.status}`}`);
    return json;
  } catch (err) {
    toast(`${what} failed: ${err.message}`);
    return { ok: false, error: err.message };
  }
}

let refreshTimer = 0;
let fetching = false;
let refetch = false;
// "change" events arrive in bursts (post, reaction, status…): coalesce them into one fetch.
function refreshSoon() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(loadState, 50);
}

async function loadState() {
  if (fetching) {
    refetch = true; // a change landed mid-fetch: fetch once more afterwards
    return;
  }
  fetching = true;
  try {
    const res = await fetch('/ui/state');
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    ui.data = await res.json();
    render();
  } catch (err) {
    toast(`Could not load state: ${err.message}`);
  } finally {
    fetching = false;
    if (refetch) {
      refetch = false;
      loadState();
    }
  }
}

function connectStream() {
  const es = new EventSource('/ui/stream');
  const live = $('traffic-live');
  es.addEventListener('open', () => {
    live.textContent = 'live';
    live.classList.add('on');
    refreshSoon(); // we may have missed changes while disconnected
  });
  es.addEventListener('error', () => {
    live.textContent = 'reconnecting…';
    live.classList.remove('on');
  });
  es.addEventListener('change', refreshSoon);
  es.addEventListener('traffic', (ev) => {
    try {
      const entry = JSON.parse(ev.data);
      const prev = ui.traffic.get(entry.id);
      // Keep the first-seen time so that an entry does not jump around when it completes.
      ui.traffic.set(entry.id, { ...prev, ...entry, at: prev?.at ?? entry.at });
      scheduleTraffic();
    } catch (err) {
      console.warn('bad traffic event', ev.data, err);
    }
  });
}

/* ---------- interactions ---------- */

function autosize(ta) {
  ta.style.height = 'auto';
  ta.style.height = `${Math.min(ta.scrollHeight, 200)}px`;
}

async function send(input, threadTs) {
  const text = input.value.trim();
  const channel = ui.channelId;
  if (!text || !channel || input.disabled) return;
  input.value = '';
  autosize(input);
  // Slash commands are channel-level, even when typed in the thread composer.
  const res = text.startsWith('/')
    ? await post('/ui/command', { channel, text })
    : await post('/ui/message', threadTs ? { channel, text, threadTs } : { channel, text });
  if (!res.ok && !input.value) {
    input.value = text; // give the text back so it can be retried
    autosize(input);
  }
  refreshSoon();
}

function wireComposer(input, button, threadTs) {
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      send(input, threadTs());
    }
  });
  input.addEventListener('input', () => autosize(input));
  button.addEventListener('click', () => send(input, threadTs()));
}

function selectChannel(id) {
  if (!id || id === ui.channelId) return;
  const input = $('composer-input');
  ui.drafts[ui.channelId] = input.value;
  ui.channelId = id;
  ui.thread = null;
  closeMenu();
  input.value = ui.drafts[id] ?? '';
  autosize(input);
  const c = currentChannel();
  history.replaceState(null, '', `#${encodeURIComponent(c.type === 'im' ? c.id : c.name)}`);
  render();
  openedConversation(c);
  if (!input.disabled) input.focus();
}

function setThread(ts, focus = false) {
  ui.thread = ts;
  ui.listSig.thread = ''; // a freshly opened thread starts at its latest reply
  render();
  if (focus && !$('thread-input').disabled) $('thread-input').focus();
}

function openMenu(button, ts) {
  const menu = $('menu');
  ui.menu = { channel: ui.channelId, ts };
  menu.hidden = false;
  const r = button.getBoundingClientRect();
  const { offsetWidth: w, offsetHeight: ht } = menu;
  menu.style.top = `${r.bottom + 4 + ht < window.innerHeight ? r.bottom + 4 : r.top - ht - 4}px`;
  menu.style.left = `${Math.max(8, Math.min(r.right - w, window.innerWidth - w - 8))}px`;
}

function closeMenu() {
  ui.menu = null;
  $('menu').hidden = true;
}

function onListClick(ev) {
  const target = ev.target.closest('[data-action]');
  const ts = target?.closest('[data-testid="message"]')?.dataset.ts;
  switch (target?.dataset.action) {
    case 'open-thread':
      return setThread(ts);
    case 'open-linked-thread':
      ev.preventDefault();
      selectChannel(target.dataset.channel);
      return setThread(target.dataset.thread);
    case 'reply':
      return setThread(ts, true);
    case 'more':
      ev.stopPropagation(); // or the document-level "click outside" handler closes it right away
      return openMenu(target, ts);
    case 'dismiss':
      ui.dismissed.add(target.closest('[data-testid="ephemeral"]').dataset.id);
      return render();
    case 'stop-session':
      return stopSession(target);
    case 'block-action':
      return clickElement(target, ts);
  }
}

async function stopSession(button) {
  button.disabled = true;
  await post('/ui/stop', { channel: ui.channelId, threadTs: button.dataset.thread });
  refreshSoon();
}

/** A button in one of the bot's messages: Slack sends the app a block_actions request. */
async function clickElement(button, ts) {
  if (!ts || button.disabled) return; // e.g. a button in an ephemeral note: not a message of the channel
  const feedback = button.dataset.feedback;
  button.disabled = true;
  const res = await post('/ui/action', {
    channel: ui.channelId,
    ts,
    actionId: button.dataset.actionId,
    feedback,
  });
  if (res.ok && feedback) ui.feedback.set(ts, feedback);
  button.disabled = false;
  refreshSoon();
}

async function restartBot(button) {
  button.disabled = true;
  button.textContent = 'Restarting…';
  const res = await post('/ui/restart', {});
  button.disabled = false;
  button.textContent = 'Restart bot';
  if (res.ok)
    toast(
      'The bot restarted without waiting for answers in progress. It tells each thread whose answer it lost, with a Send again button, once the agent would have answered.',
      'info',
    );
  refreshSoon();
}

function init() {
  wireComposer($('composer-input'), $('composer-send'), () => undefined);
  wireComposer($('thread-input'), $('thread-send'), () => ui.thread);
  for (const id of ['message-list', 'thread-list']) {
    $(id).addEventListener('click', onListClick);
    $(id).addEventListener('scroll', closeMenu, { passive: true });
  }
  keepPinned($('message-list'), 'main');
  keepPinned($('thread-list'), 'thread');
  for (const id of ['channel-list', 'dm-list']) {
    $(id).addEventListener('click', (ev) =>
      selectChannel(ev.target.closest('[data-channel-id]')?.dataset.channelId),
    );
  }
  $('thread-close').addEventListener('click', () => setThread(null));
  $('restart-bot').addEventListener('click', (ev) => restartBot(ev.currentTarget));
  // Archiving cannot be undone on the page and ends the channel's agent sessions: ask first.
  $('archive-btn').addEventListener('click', () => {
    const c = currentChannel();
    if (!c || c.archived) return;
    $('archive-dialog-channel').textContent = `#${c.name}`;
    $('archive-dialog').dataset.channel = c.id;
    $('archive-dialog').showModal();
  });
  $('archive-dialog').addEventListener('close', async () => {
    const dialog = $('archive-dialog');
    if (dialog.returnValue !== 'archive') return;
    dialog.returnValue = '';
    $('archive-btn').disabled = true;
    await post('/ui/archive', { channel: dialog.dataset.channel });
    $('archive-btn').disabled = false;
    refreshSoon();
  });
  $('menu').addEventListener('click', async (ev) => {
    if (!ev.target.closest('[data-action="shortcut-reset"]') || !ui.menu) return;
    const { channel, ts } = ui.menu;
    closeMenu();
    await post('/ui/shortcut', { channel, ts });
    refreshSoon();
  });
  $('tab-prompts').addEventListener('click', async (ev) => {
    const chip = ev.target.closest('.prompt-chip');
    if (!chip) return;
    await post('/ui/message', { channel: ui.channelId, text: chip.dataset.message });
    refreshSoon();
  });
  $('thread-extra').addEventListener('click', async (ev) => {
    const stop = ev.target.closest('[data-action="stop-session"]');
    if (stop) return stopSession(stop);
    const chip = ev.target.closest('.prompt-chip');
    if (!chip || !ui.thread) return;
    await post('/ui/message', { channel: ui.channelId, text: chip.dataset.message, threadTs: ui.thread });
    refreshSoon();
  });
  document.querySelector('.composer-hint').addEventListener('click', (ev) => {
    const chip = ev.target.closest('[data-insert]');
    // The table prompt goes where the conversation is: into the open thread, which needs no mention.
    const intoThread = chip?.id === 'hint-table' && ui.thread && !$('thread-input').disabled;
    const input = intoThread ? $('thread-input') : $('composer-input');
    if (!chip || input.disabled) return;
    const add = intoThread ? TABLE_SAMPLE : chip.dataset.insert;
    const whole = add.startsWith('/') || chip.id === 'hint-table' || !input.value;
    input.value = whole ? add : `${input.value.replace(/\s*$/, ' ')}${add}`;
    autosize(input);
    input.focus();
  });
  document.addEventListener('click', (ev) => {
    if (ui.menu && !ev.target.closest('#menu')) closeMenu();
  });
  document.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Escape') return;
    if (ui.menu) closeMenu();
    else if (ui.thread) setThread(null);
  });

  renderTraffic();
  loadState();
  connectStream();
}

init();
