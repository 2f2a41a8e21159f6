// @ts-check
/**
 * The knowledge graph (INTERFACE §3, §5): full-text search over the tenant's nodes, by kind
 * and install; one node with its properties and the edges touching it, each other end named
 * by its own text (fetched for the first few dozen edges).
 */
import { api, openApiDocument } from '../api.js';
import { announce, code, count, dl, h, label, notice, table, time, value } from '../dom.js';
import { load, olderButton, startPage } from '../view.js';

/** @typedef {import('../view.js').PageContext} PageContext */

const NEED_SEARCH = { what: 'graph search', scope: 'graph:read', verb: 'read the graph', listing: true };
const NEED_NODE = { what: 'this node', scope: 'graph:read', verb: 'read this node' };

/** Edges whose other end is looked up by name; the rest show its id. */
const NAMED_EDGES = 50;
const LOOKUPS_AT_ONCE = 4;

/** What a person calls a node: its text, title or name, else its platform id. */
function nodeText(/** @type {any} */ n) {
  const p = n.props ?? {};
  for (const k of ['text', 'title', 'name', 'full_name', 'login']) {
    if (typeof p[k] === 'string' && p[k] !== '') return p[k];
  }
  return n.external_id;
}

const nodeLink = (/** @type {string} */ id, /** @type {string} */ text) =>
  h('a', { href: `#/graph/nodes/${encodeURIComponent(id)}` }, text);

/** The node kinds the API document names (GraphNode.kind), or null when it does not say. */
async function nodeKinds() {
  const doc = await openApiDocument();
  const kinds = doc?.components?.schemas?.GraphNode?.properties?.kind?.enum;
  return Array.isArray(kinds) && kinds.every((k) => typeof k === 'string') ? /** @type {string[]} */ (kinds) : null;
}

/** @param {PageContext} ctx */
export async function graphPage(ctx) {
  startPage(ctx, 'Graph');
  const q = ctx.query.get('q') ?? '';
  const kind = ctx.query.get('kind') ?? '';
  const installId = ctx.query.get('install_id') ?? '';
  const text = h('input', { id: 'graph-q', type: 'search', value: q, spellcheck: 'false' });
  const known = await nodeKinds();
  if (ctx.signal.aborted) return;
  const kindField = known
    ? h(
        'select',
        { id: 'graph-kind' },
        h('option', { value: '' }, 'Any kind'),
        known.map((k) => h('option', { value: k, selected: k === kind }, k)),
      )
    : h('input', { id: 'graph-kind', type: 'text', value: kind, spellcheck: 'false' });
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Search the graph' },
    h('div', { class: 'field' }, h('label', { for: 'graph-q' }, 'Text'), text),
    h('div', { class: 'field' }, h('label', { for: 'graph-kind' }, 'Kind'), kindField),
    h('button', { type: 'submit' }, 'Search'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const params = new URLSearchParams();
    if (text.value.trim()) params.set('q', text.value.trim());
    if (kindField.value) params.set('kind', kindField.value);
    if (installId) params.set('install_id', installId);
    const search = params.toString();
    location.hash = `#/graph${search ? `?${search}` : ''}`;
  });
  ctx.container.append(form);
  if (installId) {
    const all = new URLSearchParams(ctx.query);
    all.delete('install_id');
    ctx.container.append(
      h(
        'p',
        {},
        'Only the install ',
        h('a', { href: `#/installs/${encodeURIComponent(installId)}` }, code(installId)),
        '. ',
        h('a', { href: `#/graph${all.size ? `?${all}` : ''}` }, 'Search every install'),
      ),
    );
  }
  const results = h('section', { 'aria-labelledby': 'results-heading' });
  ctx.container.append(results);
  const page = (/** @type {string | undefined} */ cursor) =>
    api('graph/nodes', { signal: ctx.signal, query: { q, kind, install_id: installId, limit: 50, cursor } });
  const first = await load(ctx, NEED_SEARCH, () => page(undefined), results);
  if (first === null) return;
  const what = q ? `Nodes matching “${q}”` : 'Nodes, newest first';
  results.prepend(h('h2', { id: 'results-heading' }, what));
  if (first.nodes.length === 0) {
    results.append(notice('info', 'No node matches.'));
    announce('No node matches.');
    return;
  }
  const t = table({
    caption: `${count(first.nodes.length, 'node')}${first.next_cursor ? ' (more below)' : ''}${kind ? ` of kind ${kind}` : ''}`,
    rows: first.nodes,
    columns: [
      { head: 'Node', cell: (n) => nodeLink(n.id, nodeText(n)), className: 'wrap' },
      { head: 'Kind', cell: (n) => code(n.kind) },
      { head: 'Platform id', cell: (n) => code(n.external_id), className: 'wrap' },
      { head: 'Updated', cell: (n) => time(n.updated_at) },
    ],
  });
  results.append(
    t.el,
    olderButton(ctx, NEED_SEARCH, {
      cursor: first.next_cursor,
      noun: 'nodes',
      next: async (cursor) => {
        const p = await page(cursor);
        return { items: p.nodes, cursor: p.next_cursor };
      },
      addRows: t.addRows,
      focusAfter: t.el,
    }),
  );
  announce(`${count(first.nodes.length, 'node')}${first.next_cursor ? ' or more' : ''} found.`);
}

/** @param {PageContext} ctx */
export async function nodePage(ctx) {
  const heading = startPage(ctx, 'Node');
  const id = ctx.params.id ?? '';
  ctx.container.append(h('p', {}, h('a', { href: '#/graph' }, 'Search the graph')));
  const node = await load(ctx, NEED_NODE, () => api(`graph/nodes/${encodeURIComponent(id)}`, { signal: ctx.signal }));
  if (node === null) return;
  heading.textContent = `${node.kind}: ${nodeText(node)}`;
  document.title = `${node.kind} · connector-service console`;
  const props = Object.entries(node.props ?? {});
  /** @type {any[]} */
  const edges = node.edges ?? [];
  const others = edges.map((e) => (e.from === node.id ? e.to : e.from));
  const edgesSection = h(
    'section',
    { 'aria-labelledby': 'edges-heading' },
    h('h2', { id: 'edges-heading' }, `Edges (${edges.length}${node.edges_truncated ? '+' : ''})`),
  );
  ctx.container.append(
    dl([
      ['Id', code(node.id)],
      ['Kind', code(node.kind)],
      ['Platform id', code(node.external_id)],
      ['Install', h('a', { href: `#/installs/${encodeURIComponent(node.install_id)}` }, code(node.install_id))],
      ['Source status', value(node.source_status)],
      ['Created', time(node.created_at)],
      ['Updated', time(node.updated_at)],
    ]),
    h('h2', {}, 'Properties'),
    props.length ? dl(props.map(([k, v]) => [label(k), value(v)])) : notice('info', 'No properties.'),
    edgesSection,
  );
  if (edges.length === 0) {
    edgesSection.append(notice('info', 'No edge touches this node.'));
    return;
  }
  if (node.edges_truncated) {
    edgesSection.append(notice('info', 'More edges touch this node than the service lists; the first ones are shown.'));
  }
  const names = await otherEnds(ctx, others.slice(0, NAMED_EDGES));
  if (ctx.signal.aborted) return;
  const t = table({
    caption: 'Each edge, its direction and the node at its other end',
    rows: edges.map((e, i) => ({ e, other: others[i] })),
    columns: [
      { head: 'Edge', cell: ({ e }) => code(e.type) },
      { head: 'Direction', cell: ({ e }) => (e.from === node.id ? 'outgoing' : 'incoming') },
      {
        head: 'Other node',
        cell: ({ other }) => {
          const n = names.get(other);
          return n ? [nodeLink(other, nodeText(n)), ' ', code(n.kind)] : nodeLink(other, other);
        },
        className: 'wrap',
      },
      { head: 'Properties', cell: ({ e }) => (Object.keys(e.props ?? {}).length ? value(e.props) : '') },
    ],
  });
  edgesSection.append(t.el);
}

/**
 * The nodes at the other ends, a few at a time; a node that cannot be read is left out.
 * @param {PageContext} ctx
 * @param {string[]} ids
 */
async function otherEnds(ctx, ids) {
  const unique = [...new Set(ids)];
  /** @type {Map<string, any>} */
  const found = new Map();
  const worker = async () => {
    for (let id = unique.shift(); id !== undefined && !ctx.signal.aborted; id = unique.shift()) {
      const n = await api(`graph/nodes/${encodeURIComponent(id)}`, { signal: ctx.signal }).catch(() => null);
      if (n) found.set(id, n);
    }
  };
  await Promise.all(Array.from({ length: LOOKUPS_AT_ONCE }, worker));
  return found;
}
