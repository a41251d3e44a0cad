import { z, type ZodRawShape } from 'zod';

/**
 * A zod object schema that advertises `shape` in `tools/list` but lets any argument object through
 * McpServer's own validation. McpServer turns its validation failures into plain-text errors with no
 * code; Idem validates the arguments itself so that bad input gets a structured `invalid_argument`.
 */
export function lenientObject<Shape extends ZodRawShape>(shape: Shape): z.ZodObject<Shape> {
  const strict = z.object(shape);
  class Lenient extends z.ZodObject<Shape> {
    override _parse(input: z.ParseInput): z.ParseReturnType<z.objectOutputType<Shape, z.ZodTypeAny>> {
      return z.OK(input.data as z.objectOutputType<Shape, z.ZodTypeAny>);
    }
  }
  return new Lenient(strict._def);
}
