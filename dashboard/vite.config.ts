import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// Built into dashboard/dist and served by the server at /dashboard (see src/http/dashboard/plugin.ts).
// `npm run dev:dashboard` serves it with hot reload and forwards /dashboard/api to a server on :3000.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/dashboard/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true },
  server: { proxy: { '/dashboard/api': { target: 'http://localhost:3000', changeOrigin: false } } },
});
