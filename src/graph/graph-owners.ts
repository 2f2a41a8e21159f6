/**
 * How a graph statement names the writer of each of its rows (graph-rows.ts): by a number
 * into a small list of owners, passed once per statement, since one ingest transaction may
 * hold several installs' and tenants' rows (group commit across installs).
 */

/** A row's writer: its tenant, and for nodes the install and connector that wrote it last. */
export interface Owner {
  tenantId: string;
  installId: string;
  connectorId: string;
}

/**
 * The writers of a statement's rows, each row naming its own by number (`o`, from 1):
 * written once per statement rather than once per row, so a batch of one install costs what
 * it did with the owner as constants (bench/graph/chat-batch.ts: a uuid per row in the JSON
 * cost Postgres about 10 % more per chat event and the node as much).
 */
export class Owners {
  private readonly index = new Map<string, number>();
  private readonly list: Owner[] = [];

  of(tenantId: string, installId = '', connectorId = ''): number {
    const key = `${tenantId}\u0000${installId}\u0000${connectorId}`;
    let i = this.index.get(key);
    if (i === undefined) {
      this.list.push({ tenantId, installId, connectorId });
      i = this.list.length;
      this.index.set(key, i);
    }
    return i;
  }

  /** Parameters $2, $3, $4 of the statement, as `OWNERS` reads them. */
  columns(): unknown[] {
    return [
      this.list.map((o) => o.tenantId),
      this.list.map((o) => o.installId || null),
      this.list.map((o) => o.connectorId || null),
    ];
  }
}

/** The `Owners` of a statement, joined on a row's `o`. */
export const OWNERS =
  'unnest($2::uuid[], $3::uuid[], $4::text[]) WITH ORDINALITY AS o(tenant_id, install_id, connector_id, i)';
