import { describe, expect, it } from 'vitest';
import { readToolReply } from '../../packages/idem/src/client/tool-reply.js';
import { findId } from '../../packages/idem-cli/src/cli/check/find-id.js';
import { parseJsonPath } from '../../packages/idem-cli/src/cli/check/json-path.js';

const unique = '0123456789ab';
const sent = { title: `idem check ${unique}`, workspace: 'default' };
const options = { sent, unique, key: 'idem-check-key' };
const structured = (value: Record<string, unknown>) =>
  readToolReply({ content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value });

describe('findId', () => {
  it('prefers resource_id, then id, then another *_id, at the shallowest depth', () => {
    expect(findId(structured({ note_id: 'n1', resource_id: 'r1', id: 'i1' }), options)).toMatchObject({
      value: 'r1',
      at: '$.resource_id',
      echo: false,
    });
    expect(findId(structured({ noteId: 'n1', id: 7 }), options)).toMatchObject({ value: '7', at: '$.id' });
    expect(findId(structured({ data: { item: { uuid: 'x', task_id: 't1' } } }), options)).toMatchObject({
      value: 't1',
      at: '$.data.item.task_id',
    });
    expect(findId(structured({ tasks: [{ id: 'task-1' }, { id: 'task-2' }] }), options)).toMatchObject({
      value: 'task-1',
      at: '$.tasks[0].id',
    });
  });

  it('never takes request, trace or session ids, and takes operation_id last', () => {
    expect(findId(structured({ request_id: 'q', trace_id: 't', session_id: 's' }), options)).toBeUndefined();
    expect(findId(structured({ operation_id: 'op', name: 'n' }), options)).toMatchObject({ value: 'n' });
    expect(findId(structured({ operation_id: 'op', status: 'accepted' }), options)).toMatchObject({
      value: 'op',
      candidates: [{ value: 'op', at: '$.operation_id', echo: false }],
    });
  });

  it('reads resource_link and embedded resource blocks', () => {
    const link = readToolReply({ content: [{ type: 'resource_link', uri: 'note://1', name: 'n' }] });
    expect(findId(link, options)).toMatchObject({ value: 'note://1', at: 'resource_link' });
    const embedded = readToolReply({
      content: [
        { type: 'text', text: 'made it' },
        { type: 'resource', resource: { uri: 'file:///a', text: 'x' } },
      ],
    });
    expect(findId(embedded, options)).toMatchObject({ value: 'file:///a', at: 'resource_link' });
    // An id field beats the link; a name does not.
    const both = readToolReply({
      content: [{ type: 'resource_link', uri: 'note://2', name: 'n' }],
      structuredContent: { name: 'two', id: 'n-2' },
    });
    expect(findId(both, options)?.value).toBe('n-2');
    expect(findId({ ...both, content: { name: 'two' } }, options)?.value).toBe('note://2');
  });

  it('marks echoes of the arguments, the unique part or the key', () => {
    expect(findId(structured({ name: `idem check ${unique}` }), options)).toMatchObject({ echo: true });
    expect(findId(structured({ id: 'default' }), options)).toMatchObject({ echo: true });
    expect(findId(structured({ id: 'idem-check-key' }), options)).toMatchObject({ echo: true });
    expect(findId(structured({ id: 'srv-1' }), options)).toMatchObject({ echo: false });
  });

  it('with --id-path looks nowhere else', () => {
    const reply = structured({ id: 'i1', item: { uuid: 'u1' }, 'note-id': 'n1' });
    expect(findId(reply, { ...options, idPath: parseJsonPath('$.item.uuid') })).toMatchObject({
      value: 'u1',
      at: '$.item.uuid',
    });
    expect(findId(reply, { ...options, idPath: parseJsonPath("$['note-id']") })?.value).toBe('n1');
    expect(findId(reply, { ...options, idPath: parseJsonPath('$.missing') })).toBeUndefined();
  });
});
