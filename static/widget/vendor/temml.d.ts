// Types for the vendored Temml (temml.js, the npm package's dist/temml.mjs; tests/test_math_vendor.py):
// only what math.js uses, so that tsc --checkJs (.ci/js/tsconfig.json) checks math.js
// against it instead of type-checking the 480 KB build itself.

/** Temml's MathML tree (unstable internals, read only by math.js's allow-list builder). */
export interface TemmlNode {
  type?: string;
  text?: string;
  attributes?: Record<string, string>;
  children?: TemmlNode[];
}

export interface Options {
  displayMode?: boolean;
  throwOnError?: boolean;
  trust?: boolean;
  strict?: boolean;
  maxSize?: [number, number];
  maxExpand?: number;
}

declare const Temml: {
  version: string;
  __renderToMathMLTree(expression: string, options?: Options): TemmlNode;
};

export default Temml;
