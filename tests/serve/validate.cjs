// Validates recorded HTTP responses against api/openapi.yaml with npm validators (not by hand):
// @apidevtools/swagger-parser checks the spec itself and resolves $refs; openapi-response-validator
// (ajv) checks each body against the schema of its status and media type.
// usage: node validate.cjs SPEC RESPONSES_DIR [--recorded-only]   (each response: NAME.meta = "METHOD PATH STATUS CONTENT-TYPE", NAME.body)
// Without --recorded-only every operation of the spec must have a recorded response (test_serve.sh).
'use strict';
const fs = require('fs');
const path = require('path');
const SwaggerParser = require('@apidevtools/swagger-parser');
const ResponseValidator = require('openapi-response-validator').default;

async function main() {
  const [specFile, dir, mode] = process.argv.slice(2);
  const api = await SwaggerParser.validate(specFile);  // throws on an invalid spec
  const spec = await SwaggerParser.dereference(specFile);
  if (spec.openapi !== '3.0.3') throw new Error(`expected OpenAPI 3.0.3, found ${spec.openapi}`);
  void api;
  const names = fs.readdirSync(dir).filter((f) => f.endsWith('.meta')).sort();
  let failures = 0;
  const seen = new Set();
  for (const meta of names) {
    const name = meta.slice(0, -5);
    const [method, urlPath, statusText, ...ct] = fs.readFileSync(path.join(dir, meta), 'utf8').trim().split(' ');
    const contentType = ct.join(' ');
    const status = Number(statusText);
    const body = fs.readFileSync(path.join(dir, name + '.body'), 'utf8');
    const fail = (why) => { failures++; console.log(`FAIL ${name}: ${method} ${urlPath} -> ${status} (${contentType}): ${why}`); };
    const item = spec.paths[urlPath.split('?')[0]];
    const op = item && item[method.toLowerCase()];
    let response;
    if (!op) {
      // Unknown paths and methods: the answer must still be a documented problem document.
      response = spec.components.responses.Problem;
    } else {
      response = op.responses[String(status)] || op.responses.default;
      seen.add(`${method} ${urlPath}`);
    }
    if (!response) { fail('status not documented'); continue; }
    const mediaType = contentType.split(';')[0].trim();
    const media = response.content && response.content[mediaType];
    if (!media) { fail(`media type ${mediaType} not documented for this status (have ${Object.keys(response.content || {})})`); continue; }
    let parsed = body;
    if (mediaType.endsWith('json')) {
      try { parsed = JSON.parse(body); } catch (e) { fail('body is not JSON: ' + e.message); continue; }
    }
    const validator = new ResponseValidator({
      responses: { [String(status)]: { description: 'x', content: { [mediaType]: { schema: JSON.parse(JSON.stringify(media.schema)) } } } },
    });
    const result = validator.validateResponse(status, parsed);
    if (result) { fail(JSON.stringify(result.errors.slice(0, 5))); continue; }
    console.log(`ok   ${name}: ${method} ${urlPath} -> ${status} ${mediaType}`);
  }
  for (const p of mode === '--recorded-only' ? [] : Object.keys(spec.paths))
    for (const m of Object.keys(spec.paths[p]))
      if (!seen.has(`${m.toUpperCase()} ${p}`)) { failures++; console.log(`FAIL no response recorded for ${m.toUpperCase()} ${p}`); }
  console.log(`${names.length} response(s), ${failures} failure(s)`);
  process.exit(failures ? 1 : 0);
}
main().catch((e) => { console.log('FAIL ' + (e.stack || e)); process.exit(1); });
