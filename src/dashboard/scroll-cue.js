// A cue on a table wider than its box: the side that hides columns gets a shadow and a
// chevron, so that a phone reader sees there is more to scroll to. Each `.table-wrap`
// (the scrolling box) sits in a `.table-frame` that draws the cue above the cells; the
// frame's data-overflow says which sides hide something ("left", "right", both, none).
import { el } from './dom.js';

const watched = new WeakSet();

/** Updates the frame's data-overflow from where `wrap` is scrolled to. */
function updateCue(wrap, frame) {
  const hiddenRight = wrap.scrollWidth - wrap.clientWidth - wrap.scrollLeft > 1;
  const hiddenLeft = wrap.scrollLeft > 1;
  frame.setAttribute('data-overflow', [hiddenLeft ? 'left' : '', hiddenRight ? 'right' : ''].filter(Boolean).join(' '));
}

/**
 * Watches one scrolling box: on scroll, and whenever it or its table changes size (rows
 * drawn, the window turned). Puts it in a frame first when it has none (the frame is
 * returned, for a box not yet in the page).
 */
export function watchOverflow(wrap) {
  let frame = wrap.parentElement;
  if (!frame || !frame.classList.contains('table-frame')) {
    const parent = wrap.parentElement;
    const next = wrap.nextSibling;
    frame = el('div', { className: 'table-frame' });
    if (parent) parent.insertBefore(frame, next);
    frame.appendChild(wrap);
  }
  if (watched.has(wrap)) return frame;
  watched.add(wrap);
  const update = () => updateCue(wrap, frame);
  wrap.addEventListener('scroll', update, { passive: true });
  if (window.ResizeObserver) {
    const observer = new ResizeObserver(update);
    observer.observe(wrap);
    if (wrap.firstElementChild) observer.observe(wrap.firstElementChild);
  }
  update();
  return frame;
}

/** Watches every scrolling table box of the page. */
export function watchAllOverflow() {
  document.querySelectorAll('.table-wrap').forEach((wrap) => watchOverflow(wrap));
}
