/** A JSON value as stored in receipts. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object: what an effect returns and a receipt keeps. */
export type JsonObject = { [key: string]: JsonValue };
