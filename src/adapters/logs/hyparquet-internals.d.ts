// hyparquet's page-level building blocks, exported by its package as `hyparquet/src/*.js`
// with their types under `types/` (which this project's module resolution does not map).
declare module 'hyparquet/src/column.js' {
  export { parquetHeader, readPage } from 'hyparquet/types/column';
}
declare module 'hyparquet/src/datapage.js' {
  export { decompressPage } from 'hyparquet/types/datapage';
}
declare module 'hyparquet/src/schema.js' {
  export { getMaxDefinitionLevel, getMaxRepetitionLevel, getTreePath, isFlatColumn } from 'hyparquet/types/schema';
}
declare module 'hyparquet/src/convert.js' {
  export { convert, DEFAULT_PARSERS } from 'hyparquet/types/convert';
}
declare module 'hyparquet/src/encoding.js' {
  export { readRleBitPackedHybrid } from 'hyparquet/types/encoding';
}
declare module 'hyparquet/src/plain.js' {
  export { readPlain } from 'hyparquet/types/plain';
}
declare module 'hyparquet/src/constants.js' {
  export { CompressionCodecs, Encodings, ParquetTypes } from 'hyparquet/types/constants';
}
declare module 'hyparquet/src/snappy.js' {
  export { snappyUncompress } from 'hyparquet/types/snappy';
}
