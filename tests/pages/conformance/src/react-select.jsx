// A React 19 app with react-select, as its docs show; bundled at install by build.mjs.
import React, { useState } from "react";
import { createRoot } from "react-dom/client";
import Select from "react-select";

const options = [
  { value: "chocolate", label: "Chocolate" },
  { value: "strawberry", label: "Strawberry" },
  { value: "vanilla", label: "Vanilla" },
];

function App() {
  const [selectedOption, setSelectedOption] = useState(null);
  return (
    <div style={{ width: 300, padding: 20 }}>
      <label htmlFor="flavour">Flavour</label>
      <Select
        inputId="flavour"
        defaultValue={selectedOption}
        onChange={(option) => { window.flavour = option.value; setSelectedOption(option); }}
        options={options}
      />
      <p>Your choice: {selectedOption ? selectedOption.label : "none"}</p>
    </div>
  );
}

createRoot(document.getElementById("root")).render(<App />);
