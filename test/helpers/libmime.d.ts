// libmime (mailparser's own dependency) ships no types; the tests decode encoded words with it.
declare module 'libmime' {
  const libmime: { decodeWords(value: string): string };
  export default libmime;
}
