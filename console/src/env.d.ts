/** Vite imports of stylesheets (`import 'x.css'`) have no value the code uses. */
declare module '*.css';
