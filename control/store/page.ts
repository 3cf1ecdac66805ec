// Keyset pages, as every cursor list of both backends reads them: limit + 1 rows in the
// direction of travel tell whether more lie that way; a page read backwards (towards the
// list's start, `before`) is turned round into list order.

/** The page of `rows` (read limit + 1 of them, `backwards` when going towards the list's start) in list order. */
export function pageOf<R, T>(rows: R[], limit: number, backwards: boolean, map: (r: R) => T): { items: T[]; hasMore: boolean } {
  const items = rows.slice(0, limit).map(map);
  return { items: backwards ? items.reverse() : items, hasMore: rows.length > limit };
}
