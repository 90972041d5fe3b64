/**
 * Builds a WHERE clause with $n parameters: `add('scope = ?', v)` appends the condition with `?`
 * (every occurrence) bound to v. `param(v)` binds a value and returns its placeholder.
 */
export class SqlWhere {
  readonly params: unknown[] = [];
  private readonly conditions: string[] = [];

  add(sql: string, value: unknown): this {
    const ph = this.param(value);
    this.conditions.push(sql.replaceAll('?', ph));
    return this;
  }

  /** A condition with no parameter. */
  raw(sql: string): this {
    this.conditions.push(sql);
    return this;
  }

  param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  /** ` AND a AND b` (empty when there is nothing), to follow `WHERE true`. */
  get sql(): string {
    return this.conditions.map((c) => ' AND ' + c).join('');
  }
}
