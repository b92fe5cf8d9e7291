// A dedicated worker that fetches the API when asked and posts back what it got.
onmessage = async (event) => {
  let text;
  try {
    const r = await fetch(event.data, {cache: "no-store"});
    text = r.status + " " + (await r.text()).trim();
  } catch (e) {
    text = "error " + e.message;
  }
  postMessage(text);
};
