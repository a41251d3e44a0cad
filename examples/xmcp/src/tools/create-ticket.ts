import { xmcpTool } from 'idem/xmcp';
import { createTicket } from '../tickets.js';

const tool = xmcpTool(createTicket);
export const { schema, metadata, outputSchema } = tool;
export default tool.handler;
