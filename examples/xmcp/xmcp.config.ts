import type { XmcpConfig } from 'xmcp';

const config: XmcpConfig = {
  http: { host: '127.0.0.1', port: Number(process.env.PORT ?? 3002), endpoint: '/mcp' },
  paths: { tools: 'src/tools', prompts: false, resources: false },
};
export default config;
