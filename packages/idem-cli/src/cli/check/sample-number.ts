type Schema = Record<string, unknown>;

/**
 * A number for `schema` within `minimum`/`maximum` (draft-04 boolean or later numeric exclusive
 * bounds) and `multipleOf`: the lower bound, else 1, plus `salt` while it fits.
 */
export function sampleNumber(schema: Schema, salt: number, whole: boolean): { value: number; fits: boolean } {
  const { low, high } = bounds(schema, whole);
  let value = low ?? (high !== undefined && high < 1 ? high : 1);
  if (high === undefined || value + salt <= high) value += salt;
  const multiple = finite(schema.multipleOf);
  if (multiple !== undefined && multiple > 0) {
    const up = Math.ceil(value / multiple) * multiple;
    value = high !== undefined && up > high ? Math.floor(value / multiple) * multiple : up;
  }
  return { value, fits: numberFits(value, schema, whole) };
}

/** The range to pick from, inclusive; an exclusive bound is stepped inside (half-way when tight). */
function bounds(schema: Schema, whole: boolean): { low: number | undefined; high: number | undefined } {
  // draft-04 spells exclusive bounds as booleans beside minimum/maximum.
  const lowIsExclusive = schema.exclusiveMinimum === true;
  const highIsExclusive = schema.exclusiveMaximum === true;
  const min = lowIsExclusive ? undefined : finite(schema.minimum);
  const max = highIsExclusive ? undefined : finite(schema.maximum);
  const xmin = lowIsExclusive ? finite(schema.minimum) : finite(schema.exclusiveMinimum);
  const xmax = highIsExclusive ? finite(schema.maximum) : finite(schema.exclusiveMaximum);
  if (whole) {
    const lows = [
      min === undefined ? undefined : Math.ceil(min),
      xmin === undefined ? undefined : Math.floor(xmin) + 1,
    ];
    const highs = [
      max === undefined ? undefined : Math.floor(max),
      xmax === undefined ? undefined : Math.ceil(xmax) - 1,
    ];
    return { low: largest(lows), high: smallest(highs) };
  }
  const outerLow = min ?? xmin;
  const outerHigh = max ?? xmax;
  const room = outerLow !== undefined && outerHigh !== undefined ? outerHigh - outerLow : 2;
  const step = Math.min(0.5, room / 2);
  return {
    low: largest([min, xmin === undefined ? undefined : xmin + step]),
    high: smallest([max, xmax === undefined ? undefined : xmax - step]),
  };
}

function largest(values: Array<number | undefined>): number | undefined {
  const defined = values.filter((v): v is number => v !== undefined);
  return defined.length === 0 ? undefined : Math.max(...defined);
}

function smallest(values: Array<number | undefined>): number | undefined {
  const defined = values.filter((v): v is number => v !== undefined);
  return defined.length === 0 ? undefined : Math.min(...defined);
}

/** True when `value` meets the schema's bounds and `multipleOf` (and is whole, when asked). */
export function numberFits(value: number, schema: Schema, whole: boolean): boolean {
  if (!Number.isFinite(value) || (whole && !Number.isInteger(value))) return false;
  const lowIsExclusive = schema.exclusiveMinimum === true;
  const highIsExclusive = schema.exclusiveMaximum === true;
  const min = finite(schema.minimum);
  const max = finite(schema.maximum);
  const xmin = lowIsExclusive ? min : finite(schema.exclusiveMinimum);
  const xmax = highIsExclusive ? max : finite(schema.exclusiveMaximum);
  if (!lowIsExclusive && min !== undefined && value < min) return false;
  if (!highIsExclusive && max !== undefined && value > max) return false;
  if (xmin !== undefined && value <= xmin) return false;
  if (xmax !== undefined && value >= xmax) return false;
  const multiple = finite(schema.multipleOf);
  if (multiple !== undefined && multiple > 0) {
    const ratio = value / multiple;
    if (Math.abs(ratio - Math.round(ratio)) > 1e-9) return false;
  }
  return true;
}

/** A non-negative integer keyword (`minLength`, `minItems`, …), else undefined. */
export function integer(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

export function finite(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}
