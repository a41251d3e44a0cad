import { describe, expect, it } from 'vitest';
import {
  ANSWER_PROBLEM,
  UPSTREAM_RESULT,
  answerFor,
  keptAnswer,
  outputProblem,
} from '../../packages/idem-cli/src/proxy/kept-answer.js';

const schema = {
  type: 'object',
  properties: { n: { type: 'integer' } },
  required: ['n'],
  additionalProperties: false,
};

describe('keptAnswer', () => {
  it('keeps an answer within the limit as it came', () => {
    const result = { content: [{ type: 'text', text: 'ok' }], structuredContent: { n: 1 } };
    expect(keptAnswer(schema, result, 1_024)).toEqual({ [UPSTREAM_RESULT]: result });
    expect(keptAnswer(undefined, result, 1_024)).toEqual({ [UPSTREAM_RESULT]: result });
  });

  it('keeps an answer outside the output schema as it came, with the reason beside it', () => {
    const result = { content: [{ type: 'text', text: 'did it' }], structuredContent: { wrong: 'x' } };
    const kept = keptAnswer(schema, result, 1_024);
    expect(kept[UPSTREAM_RESULT]).toEqual(result);
    expect(kept[ANSWER_PROBLEM]).toMatch(/does not match the tool's output schema/);
    const answer = answerFor(result, kept[ANSWER_PROBLEM] as string);
    expect(answer.isError).toBe(true);
    expect(answer.content.slice(0, 1)).toEqual(result.content);
    expect(answer.structuredContent).toEqual(result.structuredContent);
    expect(answer._meta).toEqual({ 'idem/answer_problem': kept[ANSWER_PROBLEM] });
  });

  it('finds no problem in a tool error, and one in a success without structuredContent', () => {
    expect(outputProblem(schema, { content: [], isError: true, structuredContent: { wrong: 1 } })).toBe(
      undefined,
    );
    expect(outputProblem(schema, { content: [] })).toMatch(/no structuredContent/);
    expect(outputProblem({ type: 'nonsense-type' }, { content: [], structuredContent: {} })).toMatch(
      /cannot be compiled/,
    );
  });

  it('keeps an answer over the limit as a bounded record with the code answer_too_large', () => {
    const result = { content: [{ type: 'text', text: 'y'.repeat(5_000) }], isError: true };
    const kept = keptAnswer(undefined, result, 2_048)[UPSTREAM_RESULT] as {
      content: { text: string }[];
      isError: boolean;
      _meta: Record<string, unknown>;
    };
    expect(kept.isError).toBe(true);
    expect(kept._meta['idem/answer_not_kept']).toEqual({
      code: 'answer_too_large',
      bytes: JSON.stringify(result).length,
      limit_bytes: 2_048,
      upstream_is_error: true,
    });
    expect(kept.content[0]?.text).toMatch(/with a tool error/);
    expect(JSON.stringify(kept)).not.toContain('yyyy');
    expect(JSON.stringify(kept).length).toBeLessThan(2_048);
  });

  it('counts bytes of UTF-8, not characters', () => {
    const result = { content: [{ type: 'text', text: 'é'.repeat(600) }] };
    expect(JSON.stringify(result).length).toBeLessThan(1_024);
    const kept = keptAnswer(undefined, result, 1_024)[UPSTREAM_RESULT] as { _meta?: unknown };
    expect(kept._meta).toBeDefined();
  });
});
