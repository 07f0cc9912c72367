import { cutIndex } from '../util/text-cut.js';

/**
 * Code fences read line by line, for cutting Markdown between lines: which fence is open at a line, and how to
 * close it there and open it again in the next message. Nested fences count too (a code block in a list item
 * is indented), which a look at top-level tokens alone misses.
 */

/** A code fence opened and not yet closed. */
export interface OpenFence {
  /** The opening line as written, indentation included (e.g. "   ```ts"). */
  opening: string;
  indent: string;
  /** The run of backticks or tildes that opened it; a closing fence is at least as long. */
  marker: string;
}

const FENCE_LINE = /^([ \t]*)(`{3,}|~{3,})(.*)$/;

/** The fence open after `line`, given the one open before it. */
export function fenceAfter(open: OpenFence | undefined, line: string): OpenFence | undefined {
  const match = FENCE_LINE.exec(line);
  const [, indent = '', marker = '', rest = ''] = match ?? [];
  if (open) {
    const closes =
      match !== null &&
      marker[0] === open.marker[0] &&
      marker.length >= open.marker.length &&
      rest.trim() === '';
    return closes ? undefined : open;
  }
  // A backtick fence's info string cannot hold a backtick: such a line is inline code.
  if (match === null || (marker[0] === '`' && rest.includes('`'))) return undefined;
  return { opening: line, indent, marker };
}

/** The fence left open at the end of `markdown`, if any. */
export function openFenceAtEnd(markdown: string): OpenFence | undefined {
  let open: OpenFence | undefined;
  for (const line of markdown.split('\n')) open = fenceAfter(open, line);
  return open;
}

/** The line that closes `fence` where it was opened. */
export function closingLine(fence: OpenFence): string {
  return `${fence.indent}${fence.marker}`;
}

/**
 * Markdown split between lines into parts of at most `maxChars`, a longer line between words. A code block open
 * at a cut is closed at the end of the part and opened again at the start of the next, at the margin with its
 * lines moved there too: a fence indented for a list item may be indented too far to open a block on its own.
 */
export function splitLines(markdown: string, maxChars: number): string[] {
  const parts: string[] = [];
  let lines: string[] = [];
  let size = 0;
  let fence: OpenFence | undefined;
  /** Leading whitespace taken off the lines of a block re-opened at the margin. */
  let dedent = 0;
  const add = (line: string) => {
    size += (lines.length > 0 ? 1 : 0) + line.length;
    lines.push(line);
  };
  /** Ends the part; `last` when nothing follows, where an open block is only closed. */
  const cut = (last = false) => {
    if (fence) {
      // A block just opened moves whole to the next part rather than leaving an empty one behind.
      if (!last && lines.at(-1) === fence.opening) lines.pop();
      else lines.push(closingLine(fence));
    }
    const part = lines.join('\n').replace(/^(?:[ \t]*\n)+|\s+$/g, '');
    if (part !== '') parts.push(part);
    lines = [];
    size = 0;
    if (fence && !last) {
      dedent += fence.indent.length;
      fence = { ...fence, opening: fence.opening.trimStart(), indent: '' };
      add(fence.opening);
    }
  };
  for (const rawLine of markdown.split('\n')) {
    const line = dedentBy(rawLine, dedent);
    let after = fenceAfter(fence, line);
    // Room for this line's pieces: a block open after it needs its closing line, and its opening again after a cut.
    const reserve = after ? closingLine(after).length + 1 : 0;
    const width = maxChars - reserve - (after ? after.opening.trimStart().length + 1 : 0);
    const insideBlock = after !== undefined && after === fence;
    for (const piece of hardWrap(line, Math.max(1, width))) {
      if (lines.length > 0 && size + 1 + piece.length + reserve > maxChars) {
        const before = dedent;
        cut();
        // The block this line is in may now be re-opened at the margin: the line moves there with it.
        if (insideBlock) after = fence;
        add(dedentBy(piece, dedent - before));
      } else add(piece);
    }
    fence = after;
    if (!fence) dedent = 0;
  }
  cut(true);
  return parts;
}

/** The line with up to `columns` of its leading whitespace removed. */
function dedentBy(line: string, columns: number): string {
  if (columns === 0) return line;
  const leading = /^[ \t]*/.exec(line)?.[0].length ?? 0;
  return line.slice(Math.min(leading, columns));
}

/** Splits an over-long line at spaces where possible, else at the limit. */
export function hardWrap(line: string, maxChars: number): string[] {
  if (line.length <= maxChars) return [line];
  const out: string[] = [];
  let rest = line;
  while (rest.length > maxChars) {
    const space = rest.lastIndexOf(' ', maxChars);
    const cut = space > maxChars / 2 ? space : cutIndex(rest, maxChars);
    out.push(rest.slice(0, cut));
    rest = rest.slice(cut).replace(/^ /, '');
  }
  if (rest !== '') out.push(rest);
  return out;
}
