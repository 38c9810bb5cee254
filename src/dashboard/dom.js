// DOM helpers shared by the views: lookup by id, an element builder, the notices.

/** The element with this id. */
export const $ = (id) => document.getElementById(id);

/**
 * A new element: `attrs.text` sets its text, `attrs.className` its class, any other
 * key an attribute; `children` are appended, falsy ones skipped.
 */
export function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null) continue;
    if (key === 'text') node.textContent = value;
    else if (key === 'className') node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children || []) if (child) node.appendChild(child);
  return node;
}

/**
 * Sets inline style properties through the CSSOM: the page's Content-Security-Policy
 * (`style-src 'self'`) refuses `style` attributes, not this.
 */
export function styled(node, properties) {
  Object.assign(node.style, properties);
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

/** Fills a notice box: a bold title and an optional line of detail. */
export function fillNotice(box, kind, state, title, detail) {
  clear(box);
  box.hidden = false;
  box.className = 'notice notice-' + kind;
  box.setAttribute('data-state', state);
  return el('div', {}, [el('strong', { text: title }), detail ? el('p', { text: detail }) : null]);
}

/**
 * One notice at a time under the controls: kind is info, loading, empty, error or
 * warning; no kind hides it. `action` adds a button ({ label, run }).
 */
export function setStatus(kind, title, detail, action) {
  const box = $('status');
  if (!kind) {
    clear(box);
    box.hidden = true;
    box.removeAttribute('data-state');
    return;
  }
  const text = fillNotice(box, kind, kind, title, detail);
  const spinner = kind === 'loading' ? el('span', { className: 'spinner', 'aria-hidden': 'true' }) : null;
  box.appendChild(el('div', { className: 'notice-body' }, [spinner, text]));
  if (action) {
    const button = el('button', { type: 'button', className: 'button', text: action.label });
    button.addEventListener('click', action.run);
    box.appendChild(button);
  }
}
