/**
 * What a model change does to stored rows (generator/migrate/migration-risks.ts, issue 21 §5), read from
 * the datamodels before and after: dropped tables and columns, and required columns that existing rows
 * could not be given a value for.
 */
import { describe, expect, it } from 'vitest';
import { columnsOf, migrationRisks, newUniqueColumns } from '../../dist/generator/migrate/migration-risks.js';

const schema = (models: string) => `datasource db {\n  provider = "sqlite"\n}\n${models}`;
const folder = (extra = '') =>
  `model Folder {\n  id        String @id\n  name      String\n  updatedAt DateTime @updatedAt\n${extra}  Note__folder Note[] @relation("Note_folder")\n}\n`;
const note = `model Note {\n  id     String @id\n  folder String?\n  folder__ref Folder? @relation("Note_folder", fields: [folder], references: [id])\n}\n`;
const system = `model SvcLog {\n  id   String @id\n  gone String\n  @@map("_log")\n}\n`;

describe('migration risks', () => {
  it('reads scalar columns only: relation fields and list fields have no column', () => {
    const cols = columnsOf(schema(folder() + note));
    expect([...cols.get('Folder')!.keys()]).toEqual(['id', 'name', 'updatedAt']);
    expect([...cols.get('Note')!.keys()]).toEqual(['id', 'folder']);
    expect(cols.get('Folder')!.get('updatedAt')).toEqual({ type: 'DateTime', optional: false, filled: true, unique: false });
  });

  it('the first migration has no risk', () => {
    expect(migrationRisks(null, schema(folder() + note))).toEqual({ lossy: [], unfillable: [] });
  });

  it('a required column without a default on an existing table is unfillable; optional, defaulted or new tables are not', () => {
    const before = schema(folder() + note);
    const after = schema(
      folder('  color String\n  size Int? \n  kind String @default("plain")\n') + note + 'model Tag {\n  id String @id\n  label String\n}\n',
    );
    const { unfillable, lossy } = migrationRisks(before, after);
    expect(lossy).toEqual([]);
    expect(unfillable).toEqual([expect.objectContaining({ code: 'DEF_REQUIRED_WITHOUT_DEFAULT', file: 'collections/Folder.json', path: '/properties/color' })]);
  });

  it('a dropped table or column is lossy; system tables are left to svc', () => {
    const before = schema(folder('  color String?\n') + note + system);
    const after = schema(folder() + `model SvcLog {\n  id String @id\n  @@map("_log")\n}\n`);
    const { lossy } = migrationRisks(before, after);
    expect(lossy.map((d) => [d.file, d.path])).toEqual([
      ['collections/Folder.json', '/properties/color'],
      ['collections/Note.json', ''],
    ]);
  });

  it('a column of an existing table that becomes @unique is a new unique column; new tables and columns, and already unique ones, are not', () => {
    const before = schema(folder('  code String? @unique\n') + note);
    const after = schema(
      folder('  code String? @unique\n  tag String? @unique\n').replace('  name      String\n', '  name      String @unique\n') +
        note.replace('folder String?', 'folder String? @unique') +
        'model Tag {\n  id String @id\n  label String @unique\n}\n',
    );
    expect(newUniqueColumns(before, after)).toEqual([
      { collection: 'Folder', property: 'name' },
      { collection: 'Note', property: 'folder' },
    ]);
    expect(newUniqueColumns(null, after)).toEqual([]);
  });
});
