/* ui.js - the live part of a run's page (docs/ui.md): listens to the run's
 * server-sent events and, when the run moved, fetches the page again and
 * swaps in its live part (status, graph, input and result, attempts,
 * events) and, unless a form is being filled in, its action forms.
 * No framework, no build step, nothing from another origin. */
(function () {
  'use strict';
  var live = document.getElementById('live');
  if (!live || !window.EventSource || !window.fetch) return;
  var run = live.getAttribute('data-run');
  var busy = false, again = false;

  function swap(doc, id, keepIfFocused) {
    var fresh = doc.querySelector(id), cur = document.querySelector(id);
    if (!fresh || !cur) return;
    if (keepIfFocused && cur.contains(document.activeElement)) return;
    cur.replaceWith(document.importNode(fresh, true));
  }

  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.pathname, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        swap(doc, '#live', false);
        swap(doc, 'section.actions', true);
        document.body.setAttribute('data-refreshed', String(Date.now()));
      })
      .catch(function () { /* the next event tries again */ })
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }

  var rev = live.getAttribute('data-revision') || '';
  var es = new EventSource('/runs/' + encodeURIComponent(run) + '/stream?revision=' +
                           encodeURIComponent(rev));
  es.addEventListener('run', refresh);
})();
