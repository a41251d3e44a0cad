export { prismaStore, type PrismaStoreOptions } from './prisma-store.js';
export {
  prismaDriver,
  type PrismaClientLike,
  type PrismaTransaction,
  type PrismaTransactionOptions,
} from './prisma-driver.js';
