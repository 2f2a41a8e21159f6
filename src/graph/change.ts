/** One committed graph change, as published on `<ns>.graph.<tenant_id>.changed` (INTERFACE §7). */
export interface GraphChange {
  node_id: string;
  kind: string;
  op: 'upserted' | 'deleted';
}
